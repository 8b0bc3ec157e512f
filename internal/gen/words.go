package gen

// Vocabulary for names, labels and text. Short lists keep the output compressible the way real
// clusters are (the same words everywhere), with random suffixes where Kubernetes puts them.
var (
	teamWords = []string{"alpha", "atlas", "beacon", "cedar", "delta", "ember", "falcon", "granite", "harbor",
		"indigo", "juniper", "kestrel", "lumen", "meridian", "nimbus", "onyx", "pioneer", "quartz", "raven",
		"sierra", "tundra", "umber", "vertex", "willow", "xenon", "yarrow", "zephyr"}
	appWords = []string{"api", "web", "worker", "cache", "auth", "billing", "search", "gateway", "orders",
		"payments", "catalog", "inventory", "notify", "report", "ingest", "stream", "scheduler", "metrics",
		"frontend", "backend", "profile", "session", "media", "render", "export", "importer", "sync", "ledger",
		"pricing", "shipping", "tracker", "audit"}
	envNames = []string{"LOG_LEVEL", "LOG_FORMAT", "HTTP_PORT", "GRPC_PORT", "METRICS_PORT", "DATABASE_URL",
		"DATABASE_POOL_SIZE", "REDIS_URL", "KAFKA_BROKERS", "KAFKA_TOPIC", "S3_BUCKET", "S3_REGION",
		"OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_SERVICE_NAME", "JAVA_OPTS", "GOMAXPROCS", "GOMEMLIMIT",
		"FEATURE_FLAGS", "CACHE_TTL_SECONDS", "REQUEST_TIMEOUT", "UPSTREAM_URL", "AUTH_ISSUER", "AUTH_AUDIENCE",
		"SENTRY_DSN", "TZ", "LANG", "WORKER_CONCURRENCY", "QUEUE_NAME", "RETRY_LIMIT", "BATCH_SIZE",
		"SMTP_HOST", "SMTP_PORT", "PUBLIC_URL", "CORS_ORIGINS", "RATE_LIMIT_RPS", "SESSION_COOKIE_NAME",
		"TRACING_SAMPLE_RATE", "HEALTHCHECK_PATH", "CONFIG_PATH", "DATA_DIR"}
	textWords = []string{"server", "timeout", "enabled", "replicas", "endpoint", "retry", "backoff", "cache",
		"limit", "queue", "worker", "threads", "buffer", "upstream", "tls", "certificate", "logging", "level",
		"format", "json", "metrics", "path", "interval", "window", "threshold", "pool", "size", "region",
		"bucket", "topic", "partition", "consumer", "producer", "schema", "version", "feature", "rollout"}
	imageRegistries = []string{"registry.example.com", "ghcr.io/example", "quay.io/example", "docker.io/example"}
	eventReasons    = []struct{ reason, typ, msg string }{
		{"Scheduled", "Normal", "Successfully assigned %s to %s"},
		{"Pulling", "Normal", "Pulling image \"%s\""},
		{"Pulled", "Normal", "Container image \"%s\" already present on machine"},
		{"Created", "Normal", "Created container: %s"},
		{"Started", "Normal", "Started container %s"},
		{"Killing", "Normal", "Stopping container %s"},
		{"Unhealthy", "Warning", "Readiness probe failed: Get \"http://%s:8080/healthz\": context deadline exceeded (Client.Timeout exceeded while awaiting headers)"},
		{"BackOff", "Warning", "Back-off restarting failed container %s in pod %s"},
	}
)

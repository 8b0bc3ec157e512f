// Command web is the lab's HTTP server: GET / answers "<hostname> <remote>\n"
// on :8080 (or $PORT), so a check can tell which pod answered.
package main

import (
	"fmt"
	"log"
	"net/http"
	"os"
)

func main() {
	port := os.Getenv("PORT")
	if port == "" {
		port = "8080"
	}
	host, err := os.Hostname()
	if err != nil {
		log.Fatalf("web: hostname: %v", err)
	}
	http.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "%s %s\n", host, r.RemoteAddr)
	})
	log.Printf("web: %s listening on :%s", host, port)
	log.Fatal(http.ListenAndServe(":"+port, nil))
}

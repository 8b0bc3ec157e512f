// Package yamledit edits YAML text in place, at the positions
// go.yaml.in/yaml/v3 reports for its nodes, so that every byte it does not
// replace (comments, key order, quoting, indentation, line endings) stays
// as it was.
//
// yaml.v3 gives a node's position as a 1-based line and column: columns
// count characters (runes), not bytes; a line ends at any YAML 1.1 line
// break (\n, \r\n, a lone \r, NEL, LS or PS); and a byte order mark at the
// start of the text is not counted. Parse indexes the lines once, so that
// every position converts to a byte offset the same way; edits are queued
// against the original offsets and applied by Bytes.
package yamledit

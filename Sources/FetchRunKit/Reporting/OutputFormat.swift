/// How results are written to stdout.
package enum OutputFormat: String, Sendable, CaseIterable {
    /// Lines for people.
    case text
    /// One JSON object per line (NDJSON), each with an `event` field.
    case json
}

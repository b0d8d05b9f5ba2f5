/// The exit codes of the command-line contract (docs/CLI.md).
package enum ExitStatus {
    package static let success: Int32 = 0
    /// resolve: the name has no address. health: degraded or hijack suspected. fetch: the request failed.
    package static let negative: Int32 = 1
    /// Bad input: usage, an invalid name, an invalid server address, invalid configuration.
    package static let usage: Int32 = 2
    /// Nothing could be reached.
    package static let unreachable: Int32 = 3
}

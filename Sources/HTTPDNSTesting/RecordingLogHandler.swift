import HTTPDNSSynchronization
import Logging

/// A log handler that keeps every message, for tests that check what a library said.
public struct RecordingLogHandler: LogHandler {
    /// The messages logged through every handler made over it, in order.
    public final class Records: Sendable {
        private let entries = Mutex<[(level: Logger.Level, message: String)]>([])

        public init() {}

        /// Every message logged so far, with its level.
        public var all: [(level: Logger.Level, message: String)] { entries.withLock { $0 } }

        fileprivate func append(_ level: Logger.Level, _ message: String) {
            entries.withLock { $0.append((level, message)) }
        }
    }

    public var logLevel: Logger.Level = .trace
    public var metadata: Logger.Metadata = [:]
    private let records: Records

    public init(records: Records) {
        self.records = records
    }

    /// A logger that records into `records`, at every level.
    public static func logger(_ records: Records) -> Logger {
        Logger(label: "httpdns.test") { _ in RecordingLogHandler(records: records) }
    }

    public subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    public func log(event: LogEvent) {
        records.append(event.level, "\(event.message)")
    }
}

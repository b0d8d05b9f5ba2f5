import CAres
import HTTPDNSCore

/// A c-ares status code, and how it maps onto the library's answers and errors.
struct CAresStatus: Error, Sendable, Hashable {
    let code: Int32

    init(_ code: Int32) { self.code = code }

    /// The caller cancelled before c-ares answered. c-ares itself never reports `ARES_ECANCELLED` here: the
    /// library never calls `ares_cancel`.
    static let cancelledByCaller = CAresStatus(ARES_ECANCELLED)

    /// The negative answer this status stands for, if it is one.
    static func negativeAnswer(_ status: CAresStatus) -> NegativeAnswer? {
        switch status.code {
        case ARES_ENOTFOUND: .nameNotFound
        case ARES_ENODATA: .noData
        default: nil
        }
    }

    /// The typed error for a failed lookup, naming the servers asked.
    static func error(
        _ status: CAresStatus,
        host: HostName,
        families: AddressFamilies,
        servers: String,
        transport: CAresSource.Configuration.Transport
    ) -> ResolutionError {
        error(status, asking: "asking \(servers) over \(transport) for \(families) of \(host)")
    }

    /// The typed error for a failed query; `asking` says what was asked of whom.
    static func error(_ status: CAresStatus, asking: String) -> ResolutionError {
        switch status.code {
        case ARES_ETIMEOUT:
            return ResolutionError(.timeout, "timed out \(asking)")
        case ARES_EREFUSED:
            return ResolutionError(.refused, "the server refused the query (REFUSED) \(asking)")
        case ARES_ESERVFAIL:
            return ResolutionError(.serverFailure, "the server failed (SERVFAIL) \(asking)")
        case ARES_ENOTIMP:
            return ResolutionError(.serverFailure, "the server does not implement the query (NOTIMP) \(asking)")
        case ARES_ECONNREFUSED, ARES_EOF:
            return ResolutionError(.serverUnreachable, "could not reach the server (connection refused or closed) \(asking)")
        case ARES_EBADRESP:
            return ResolutionError(.malformedAnswer, "the answer was malformed \(asking)")
        case ARES_EFORMERR:
            return ResolutionError(.malformedAnswer, "the server could not parse the query (FORMERR) \(asking)")
        case ARES_EBADNAME:
            return ResolutionError(.badName, "c-ares rejected the name \(asking)")
        case ARES_EBADQUERY:
            return ResolutionError(.badName, "c-ares rejected the query as malformed \(asking)")
        case ARES_EDESTRUCTION:
            return ResolutionError(.shutdown, "the c-ares resolver was shut down while \(asking)")
        default:
            return ResolutionError(.internalError, "c-ares failed (\(String(cString: ares_strerror(status.code)))) \(asking)")
        }
    }
}

import HTTPDNSCore
import NIOCore
import NIOSSL
import NIOTLS

/// Refuses a TLS connection whose certificate does not hold `host` as a DNS name. Add it right after
/// `NIOSSLClientHandler`:
///
/// ```swift
/// try channel.pipeline.syncOperations.addHandlers([
///     NIOSSLClientHandler(context: tls, serverHostname: host),
///     CertificateNameHandler(host: host),
/// ])
/// ```
///
/// NIOSSL's own check also accepts a certificate whose IP address SAN is the address connected to, whatever server
/// name was asked. Where that address came from a resolver, such a certificate proves nothing about the name: a
/// lying answer pointing at a host with a certificate for its own address would pass. This handler checks once more
/// when the handshake completes (NIOSSL's verification having passed): a certificate with subject alternative names
/// must hold a DNS name matching `host` (exactly, or a `*` first label standing for exactly one label). Writes made
/// before that are held, so nothing reaches a server that fails. On failure it fires a ``CertificateNameError`` and
/// closes the connection, failing the held writes with it. A connection without TLS fails too: a name cannot be
/// checked over plaintext.
public final class CertificateNameHandler: ChannelDuplexHandler, RemovableChannelHandler {
    public typealias InboundIn = NIOAny
    public typealias InboundOut = NIOAny
    public typealias OutboundIn = NIOAny
    public typealias OutboundOut = NIOAny

    private let host: String
    private var verified = false
    private var failed = false
    private var held: [(data: NIOAny, promise: EventLoopPromise<Void>?)] = []
    private var flushHeld = false

    /// - Parameter host: the name the certificate must hold, as a DNS name.
    public init(host: String) {
        self.host = host
    }

    public func handlerAdded(context: ChannelHandlerContext) {
        guard (try? context.pipeline.syncOperations.handler(type: NIOSSLHandler.self)) != nil else {
            fail(context: context, CertificateNameError(.notTLS, host: host, reason: "the connection has no TLS handler before this one"))
            return
        }
    }

    public func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if let tls = event as? TLSUserEvent, case .handshakeCompleted = tls, !verified, !failed {
            do {
                try check(context: context)
            } catch {
                fail(context: context, error)
                return
            }
            verified = true
            let writes = held
            held = []
            for write in writes { context.write(write.data, promise: write.promise) }
            if flushHeld { context.flush() }
        }
        context.fireUserInboundEventTriggered(event)
    }

    public func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        if verified {
            context.write(data, promise: promise)
        } else if failed {
            promise?.fail(CertificateNameError(.nameNotHeld, host: host, reason: "the connection was refused"))
        } else {
            held.append((data, promise))
        }
    }

    public func flush(context: ChannelHandlerContext) {
        if verified { context.flush() } else { flushHeld = true }
    }

    public func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        // Nothing is passed on from a server that failed.
        guard !failed else { return }
        context.fireChannelRead(data)
    }

    public func handlerRemoved(context: ChannelHandlerContext) {
        let writes = held
        held = []
        for write in writes {
            write.promise?.fail(CertificateNameError(.nameNotHeld, host: host, reason: "the connection closed before its certificate was checked"))
        }
    }

    private func check(context: ChannelHandlerContext) throws(CertificateNameError) {
        guard let tls = try? context.pipeline.syncOperations.handler(type: NIOSSLHandler.self) else {
            throw CertificateNameError(.notTLS, host: host, reason: "the connection has no TLS handler")
        }
        guard let certificate = tls.peerCertificate else {
            throw CertificateNameError(.nameNotHeld, host: host, reason: "the server presented no certificate")
        }
        var sawName = false
        var dnsNames: [String] = []
        for name in certificate._subjectAlternativeNames() {
            sawName = true
            guard name.nameType == .dnsName else { continue }
            let text = name.contents.withUnsafeBufferPointer { String(decoding: $0, as: UTF8.self) }
            if CertificateNameMatch.matches(text, host) { return }
            dnsNames.append(text)
        }
        // No subject alternative names: NIOSSL checked the common name against the server name asked.
        guard sawName else { return }
        throw CertificateNameError(
            .nameNotHeld,
            host: host,
            reason: "the certificate does not hold \(host) as a DNS name (only \(dnsNames.isEmpty ? "addresses" : dnsNames.joined(separator: ", ")))"
        )
    }

    private func fail(context: ChannelHandlerContext, _ error: any Error) {
        failed = true
        let writes = held
        held = []
        for write in writes { write.promise?.fail(error) }
        context.fireErrorCaught(error)
        context.close(promise: nil)
    }
}

/// A TLS connection refused by ``CertificateNameHandler``: its certificate does not hold the name.
public struct CertificateNameError: Error, Sendable, Hashable, CustomStringConvertible {
    /// What kind of failure this is. A struct, so that codes can be added without breaking a caller's `switch`.
    public struct Code: Sendable, Hashable, CustomStringConvertible {
        private enum Base: String, Sendable, Hashable, CaseIterable {
            case nameNotHeld = "name_not_held"
            case notTLS = "not_tls"
        }

        private let base: Base
        private init(_ base: Base) { self.base = base }

        /// The certificate holds other names, or only addresses, or there is none.
        public static let nameNotHeld = Code(.nameNotHeld)
        /// The connection has no TLS, so there is no certificate to check.
        public static let notTLS = Code(.notTLS)

        /// Every code.
        public static let all: [Code] = Base.allCases.map(Code.init)

        /// The code as a short snake-case word.
        public var description: String { base.rawValue }
    }

    /// What kind of failure this is.
    public let code: Code
    /// The name the certificate had to hold.
    public let host: String
    /// What was wrong.
    public let reason: String
    /// The error underneath, when there is one. Not compared or hashed.
    public let cause: (any Error)?

    /// - Parameters:
    ///   - code: what kind of failure this is.
    ///   - host: the name the certificate had to hold.
    ///   - reason: what was wrong.
    ///   - cause: the error underneath.
    public init(_ code: Code, host: String, reason: String, cause: (any Error)? = nil) {
        self.code = code
        self.host = host
        self.reason = reason
        self.cause = cause
    }

    public var description: String { "the TLS certificate was not accepted for \(host): \(reason)" }

    public static func == (lhs: CertificateNameError, rhs: CertificateNameError) -> Bool {
        lhs.code == rhs.code && lhs.host == rhs.host && lhs.reason == rhs.reason
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(code)
        hasher.combine(host)
        hasher.combine(reason)
    }
}

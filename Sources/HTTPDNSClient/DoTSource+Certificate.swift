import NIOCore
import NIOSSL

extension DoTSource {
    /// When the certificate of the server at `index` stops being valid (its notAfter, in seconds since 1970), read from
    /// the source's open connection to it: a certificate that passed every check of the source. Nil when no
    /// connection to it is open. For `httpdns health`, after a lookup.
    package func certificateNotValidAfter(serverAt index: Int) async -> Int? {
        guard configuration.servers.indices.contains(index), let connection = await currentConnection(at: index), connection.isActive else { return nil }
        let channel = connection.channel
        let notAfter = try? await channel.eventLoop.submit { () throws -> Int? in
            try channel.pipeline.syncOperations.handler(type: NIOSSLClientHandler.self).peerCertificate.map { Int($0.notValidAfter) }
        }.get()
        return notAfter ?? nil
    }
}

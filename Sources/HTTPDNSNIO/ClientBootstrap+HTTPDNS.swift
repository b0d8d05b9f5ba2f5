import HTTPDNSCore
import NIOPosix

extension ClientBootstrap {
    /// Resolves the host of the next `connect(host:port:)` through `resolver`: sets a new ``HTTPDNSNIOResolver``
    /// as the bootstrap's resolver, and returns the bootstrap.
    ///
    /// NIO's bootstrap keeps the resolver it is given and hands that one object to every connect made with it (in
    /// SwiftNIO 2.101, only its default getaddrinfo resolver is made afresh per connect). Connects made one after
    /// another get a lookup each either way; for connects in flight at once, call this again before each, so that
    /// each has its own resolver and one attempt's cancellation cannot fail another's lookup:
    ///
    /// ```swift
    /// let first = bootstrap.resolving(with: resolver).connect(host: "a.example.com", port: 443)
    /// let second = bootstrap.resolving(with: resolver).connect(host: "b.example.com", port: 443)
    /// ```
    ///
    /// - Parameters:
    ///   - resolver: the resolver the lookup goes through; not owned.
    ///   - families: the families to ask for; a family left out is answered with no addresses. Default both.
    /// - Returns: the bootstrap, for chaining.
    public func resolving(with resolver: HostResolver, families: AddressFamilies = .all) -> ClientBootstrap {
        self.resolver(HTTPDNSNIOResolver(resolver: resolver, families: families))
    }
}

import HTTPDNSCore
import ServiceLifecycle

/// A c-ares source in a `ServiceGroup`: it resolves from the start, and on graceful shutdown (or cancellation)
/// ends its thread and closes its sockets (`ResolutionSource`'s `run()`). Put it before the services that resolve
/// through it, so that the group, which shuts services down in reverse order, stops them first.
extension CAresSource: Service {}

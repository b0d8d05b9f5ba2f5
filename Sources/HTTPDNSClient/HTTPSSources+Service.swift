import HTTPDNSCore
import ServiceLifecycle

// Each HTTPS source in a `ServiceGroup`: it resolves from the start, and on graceful shutdown (or cancellation)
// closes its connections (`ResolutionSource`'s `run()`).
extension NativeServiceSource: Service {}
extension DoHSource: Service {}
extension JSONDNSSource: Service {}

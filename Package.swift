// swift-tools-version:6.2
import PackageDescription

// Linux only: the code uses Linux's APIs (CLOCK_MONOTONIC_COARSE, /proc, glibc's resolver codes) and is built and
// tested on Linux alone, so the package claims no other platform.
let package = Package(
    name: "swift-httpdns",
    products: [
        .library(name: "HTTPDNSCore", targets: ["HTTPDNSCore"]),
        .library(name: "HTTPDNSWire", targets: ["HTTPDNSWire"]),
        .library(name: "HTTPDNSCAres", targets: ["HTTPDNSCAres"]),
        .library(name: "HTTPDNSClient", targets: ["HTTPDNSClient"]),
        .library(name: "HTTPDNSServer", targets: ["HTTPDNSServer"]),
        .library(name: "HTTPDNSInterceptor", targets: ["HTTPDNSInterceptor"]),
        .library(name: "HTTPDNSURLSession", targets: ["HTTPDNSURLSession"]),
        .library(name: "HTTPDNSNIO", targets: ["HTTPDNSNIO"]),
        .library(name: "HTTPDNSMetrics", targets: ["HTTPDNSMetrics"]),
        .library(name: "HTTPDNSTesting", targets: ["HTTPDNSTesting"]),
        // The command line's settings (keys, environment variables, flags, the JSON file), for the fuzz target of
        // configuration files and for tools that want the same keys.
        .library(name: "HTTPDNSSettings", targets: ["HTTPDNSSettings"]),
        // gRPC (grpc-swift 2) resolving through HTTPDNS; its sources and gRPC dependencies build only with the
        // trait `GRPC`.
        .library(name: "HTTPDNSGRPC", targets: ["HTTPDNSGRPC"]),
        .executable(name: "httpdns", targets: ["httpdns"]),
        // Adapters, each compiled only under its trait: generated OpenAPI clients and Vapor's `app.client`.
        .library(name: "HTTPDNSOpenAPI", targets: ["HTTPDNSOpenAPI"]),
        .library(name: "HTTPDNSVapor", targets: ["HTTPDNSVapor"]),
    ],
    traits: [
        // The entry points of the fuzz targets in Fuzz/ (raw bytes into the service's connections), and NIOEmbedded
        // under them. Fuzz/Package.swift enables it; no default build compiles them.
        .trait(name: "Fuzzing", description: "Compile the fuzz entry points that Fuzz/ drives."),
        // HTTPDNSGRPC's sources and its gRPC packages (grpc-swift 2 and its NIO transport). Not default: a backend
        // that does not ask for it builds no gRPC package.
        .trait(name: "GRPC", description: "Build HTTPDNSGRPC: gRPC (grpc-swift 2) channels that resolve through HTTPDNS."),
        // The adapters and their heavy packages: without the trait, HTTPDNSOpenAPI and HTTPDNSVapor are empty and
        // swift-openapi-runtime and Vapor are not built.
        .trait(name: "OpenAPI", description: "Build HTTPDNSOpenAPI: a swift-openapi-runtime ClientTransport over the interceptor."),
        .trait(name: "Vapor", description: "Build HTTPDNSVapor: Vapor's app.client and req.client through the interceptor."),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-log.git", from: "1.16.2"),
        .package(url: "https://github.com/apple/swift-metrics.git", from: "2.13.0"),
        .package(url: "https://github.com/apple/swift-argument-parser.git", from: "1.8.2"),
        .package(url: "https://github.com/swift-server/swift-prometheus.git", from: "2.4.1"),
        .package(url: "https://github.com/hummingbird-project/hummingbird.git", from: "2.28.1"),
        .package(url: "https://github.com/apple/swift-crypto.git", from: "3.12.3"),
        .package(url: "https://github.com/apple/swift-http-types.git", from: "1.8.0"),
        .package(url: "https://github.com/apple/swift-nio.git", from: "2.101.2"),
        .package(url: "https://github.com/apple/swift-nio-extras.git", from: "1.35.2"),
        .package(url: "https://github.com/apple/swift-nio-http2.git", from: "1.46.0"),
        .package(url: "https://github.com/apple/swift-nio-ssl.git", from: "2.37.6"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle.git", from: "2.13.0"),
        .package(url: "https://github.com/apple/swift-configuration.git", from: "1.4.0", traits: []),
        .package(url: "https://github.com/swift-server/async-http-client.git", from: "1.37.0"),
        // Only for HTTPDNSGRPC, with the trait `GRPC`.
        .package(url: "https://github.com/grpc/grpc-swift-2.git", from: "2.4.3"),
        .package(url: "https://github.com/grpc/grpc-swift-nio-transport.git", from: "2.9.2"),
        // Only for the traits OpenAPI and Vapor.
        .package(url: "https://github.com/apple/swift-openapi-runtime.git", from: "1.13.4"),
        // Only for `httpdns-bench adapters` with the trait OpenAPI: the baseline transport.
        .package(url: "https://github.com/swift-server/swift-openapi-async-http-client.git", from: "1.5.0"),
        .package(url: "https://github.com/vapor/vapor.git", from: "4.122.3"),
        // `swift package generate-documentation`: the DocC catalogs of the library modules.
        .package(url: "https://github.com/swiftlang/swift-docc-plugin", from: "1.5.0"),
    ],
    targets: [
        // The C API of libc-ares-dev; imported only by HTTPDNSCAres.
        .systemLibrary(
            name: "CAres",
            pkgConfig: "libcares",
            providers: [.apt(["libc-ares-dev"])]
        ),
        // `Mutex` for every module: the standard library's, or one ThreadSanitizer understands in a
        // `scripts/sanitize.sh thread` build (-DHTTPDNS_THREAD_SANITIZER).
        .target(name: "HTTPDNSSynchronization"),
        .target(
            name: "HTTPDNSCore",
            dependencies: [
                "HTTPDNSSynchronization",
                .product(name: "Configuration", package: "swift-configuration"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ]
        ),
        // Wire formats shared by the service and its clients: DNS messages, the native API's models and
        // signatures. No networking.
        .target(
            name: "HTTPDNSWire",
            dependencies: [
                "HTTPDNSCore",
                .product(name: "Crypto", package: "swift-crypto"),
            ]
        ),
        .target(
            name: "HTTPDNSCAres",
            dependencies: [
                "HTTPDNSSynchronization",
                "CAres",
                "HTTPDNSCore",
                .product(name: "Configuration", package: "swift-configuration"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ]
        ),
        // What every client of ours shares on SwiftNIO and AsyncHTTPClient, below both the HTTPS sources and the
        // interceptor: the race of an operation against a deadline, the one classifier of certificate errors, and
        // what an owner of clients does when it is dropped unshut. `package` access only.
        .target(
            name: "HTTPDNSNetworking",
            dependencies: [
                "HTTPDNSCore",
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
            ]
        ),
        // Clients of an HTTPDNS service over HTTPS, addressed by IP: the native API (and, next, DoH and JSON DNS),
        // with failover between the service's addresses.
        .target(
            name: "HTTPDNSClient",
            dependencies: [
                "HTTPDNSSynchronization",
                "HTTPDNSCore",
                "HTTPDNSNetworking",
                "HTTPDNSWire",
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "Configuration", package: "swift-configuration"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOHTTP2", package: "swift-nio-http2"),
                .product(name: "NIOHPACK", package: "swift-nio-http2"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "NIOTLS", package: "swift-nio"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ]
        ),
        // The service's own connections: the HTTP/1.1 front and the HTTP/2 connection, which answer cache hits on
        // the event loop, and TLS with ALPN. No routes: the service plugs its cache-hit path and router in.
        .target(
            name: "HTTPDNSServerTransport",
            dependencies: [
                "HTTPDNSSynchronization",
                .product(name: "HummingbirdCore", package: "hummingbird"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "NIOCore", package: "swift-nio"),
                // Only for the fuzz entry points (TransportFuzzing), which the trait `Fuzzing` builds.
                .product(name: "NIOEmbedded", package: "swift-nio", condition: .when(traits: ["Fuzzing"])),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOHPACK", package: "swift-nio-http2"),
                .product(name: "NIOHTTPTypes", package: "swift-nio-extras"),
                .product(name: "NIOHTTPTypesHTTP1", package: "swift-nio-extras"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "NIOTLS", package: "swift-nio"),
            ]
        ),
        // The HTTPDNS service: routes, accounts and signatures, rate limits, the cache-hit path.
        .target(
            name: "HTTPDNSServer",
            dependencies: [
                "HTTPDNSSynchronization",
                "HTTPDNSCore",
                "HTTPDNSServerTransport",
                "HTTPDNSWire",
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HummingbirdCore", package: "hummingbird"),
                .product(name: "Configuration", package: "swift-configuration"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ]
        ),
        // The interceptor: requests sent straight to resolved addresses, keeping the real name in the Host header,
        // SNI and the certificate check. The canonical request and the cache storage policy are pure parts of it.
        .target(
            name: "HTTPDNSInterceptor",
            dependencies: [
                "HTTPDNSSynchronization",
                "HTTPDNSCore",
                "HTTPDNSNetworking",
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "Configuration", package: "swift-configuration"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOHTTP2", package: "swift-nio-http2"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ]
        ),
        // The URLSession adapter: a FoundationNetworking URLProtocol that forwards through the interceptor, its own
        // module so that only its users link FoundationNetworking.
        .target(
            name: "HTTPDNSURLSession",
            dependencies: [
                "HTTPDNSSynchronization",
                "HTTPDNSInterceptor",
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
            ]
        ),
        // A SwiftNIO `Resolver` over `HostResolver`, for libraries that connect with a `ClientBootstrap`: NIO's own
        // Happy Eyeballs over answers from the trusted source and the guard.
        .target(
            name: "HTTPDNSNIO",
            dependencies: [
                "HTTPDNSSynchronization",
                "HTTPDNSCore",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "NIOTLS", package: "swift-nio"),
            ]
        ),
        // gRPC (grpc-swift 2) through HTTPDNS: a push name resolver over `HostResolver` and the per-connection
        // check that the certificate holds the name. Every gRPC dependency is conditional on the trait `GRPC`, and the
        // sources are wrapped in `#if GRPC`: without the trait the module is empty.
        .target(
            name: "HTTPDNSGRPC",
            dependencies: [
                .target(name: "HTTPDNSCore", condition: .when(traits: ["GRPC"])),
                .target(name: "HTTPDNSNetworking", condition: .when(traits: ["GRPC"])),
                .product(name: "GRPCCore", package: "grpc-swift-2", condition: .when(traits: ["GRPC"])),
                .product(name: "GRPCNIOTransportHTTP2Posix", package: "grpc-swift-nio-transport", condition: .when(traits: ["GRPC"])),
                .product(name: "Logging", package: "swift-log", condition: .when(traits: ["GRPC"])),
                .product(name: "NIOCore", package: "swift-nio", condition: .when(traits: ["GRPC"])),
                .product(name: "NIOPosix", package: "swift-nio", condition: .when(traits: ["GRPC"])),
                .product(name: "NIOSSL", package: "swift-nio-ssl", condition: .when(traits: ["GRPC"])),
                .product(name: "NIOTLS", package: "swift-nio", condition: .when(traits: ["GRPC"])),
            ]
        ),
        // Metrics for backends that link the libraries: the Prometheus exposition with help texts, and a small
        // `/metrics` server for those without an HTTP server of their own.
        .target(
            name: "HTTPDNSMetrics",
            dependencies: [
                "HTTPDNSSynchronization",
                "HTTPDNSCore",
                .product(name: "Configuration", package: "swift-configuration"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "Prometheus", package: "swift-prometheus"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ]
        ),
        // The command line's settings: one table of keys per command, read from a JSON file, the environment and
        // flags through swift-configuration, checked by the libraries they configure.
        .target(
            name: "HTTPDNSSettings",
            dependencies: [
                "HTTPDNSCAres",
                "HTTPDNSClient",
                "HTTPDNSCore",
                "HTTPDNSServer",
                "HTTPDNSWire",
                .product(name: "Configuration", package: "swift-configuration"),
            ]
        ),
        // Test support: a manual clock, scripted and static sources, and starters for real peers (dnsmasq, the
        // service as a process). The benchmarks of `httpdns-bench` use its static source too.
        .target(
            name: "HTTPDNSTesting",
            dependencies: ["HTTPDNSSynchronization", "HTTPDNSCore", .product(name: "Logging", package: "swift-log")]
        ),
        // What the two executables share: their main (logs to stderr, argument errors exit 2), their exit codes and
        // their output. `package` access only.
        .target(
            name: "HTTPDNSCommandLine",
            dependencies: [
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOCore", package: "swift-nio"),
            ]
        ),
        .executableTarget(
            name: "httpdns",
            dependencies: [
                "HTTPDNSCommandLine",
                "HTTPDNSSynchronization",
                "HTTPDNSClient",
                "HTTPDNSCore",
                "HTTPDNSMetrics",
                "HTTPDNSNetworking",
                "HTTPDNSInterceptor",
                "HTTPDNSURLSession",
                "HTTPDNSCAres",
                "HTTPDNSServer",
                "HTTPDNSSettings",
                "HTTPDNSWire",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "Prometheus", package: "swift-prometheus"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ]
        ),
        // The benchmarks (`httpdns-bench cache|cold|…`, docs/PERFORMANCE.md): an executable target, not a product, so
        // that `httpdns` neither ships them nor links the test support. `swift build` builds it.
        .executableTarget(
            name: "httpdns-bench",
            dependencies: [
                "HTTPDNSCommandLine",
                "HTTPDNSSynchronization",
                "HTTPDNSCAres",
                "HTTPDNSClient",
                "HTTPDNSCore",
                "HTTPDNSInterceptor",
                "HTTPDNSTesting",
                "HTTPDNSWire",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "Prometheus", package: "swift-prometheus"),
                // `httpdns-bench adapters`: each stack, and its baseline, only with its trait.
                .target(name: "HTTPDNSGRPC", condition: .when(traits: ["GRPC"])),
                .product(name: "GRPCCore", package: "grpc-swift-2", condition: .when(traits: ["GRPC"])),
                .product(name: "GRPCNIOTransportHTTP2", package: "grpc-swift-nio-transport", condition: .when(traits: ["GRPC"])),
                .target(name: "HTTPDNSOpenAPI", condition: .when(traits: ["OpenAPI"])),
                .product(name: "HTTPTypes", package: "swift-http-types", condition: .when(traits: ["OpenAPI"])),
                .product(name: "OpenAPIRuntime", package: "swift-openapi-runtime", condition: .when(traits: ["OpenAPI"])),
                .product(name: "OpenAPIAsyncHTTPClient", package: "swift-openapi-async-http-client", condition: .when(traits: ["OpenAPI"])),
                .target(name: "HTTPDNSVapor", condition: .when(traits: ["Vapor"])),
                .product(name: "Vapor", package: "vapor", condition: .when(traits: ["Vapor"])),
            ]
        ),
        // A backend that links the libraries and exports their metrics both ways (docs/METRICS.md); built with
        // everything else, run by the integration tests.
        .executableTarget(
            name: "httpdns-example-backend",
            dependencies: [
                "HTTPDNSCAres",
                "HTTPDNSClient",
                "HTTPDNSCore",
                "HTTPDNSInterceptor",
                "HTTPDNSMetrics",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ],
            path: "Examples/Backend"
        ),
        // The README's tour, linking the library: its code is the README's, word for word (a test checks).
        .executableTarget(
            name: "httpdns-tour",
            dependencies: [
                "HTTPDNSClient",
                "HTTPDNSCore",
                "HTTPDNSInterceptor",
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
            ],
            path: "Examples/Tour"
        ),
        .testTarget(
            name: "HTTPDNSCoreTests",
            dependencies: [
                "HTTPDNSSynchronization",
                "HTTPDNSCore",
                "HTTPDNSTesting",
                .product(name: "MetricsTestKit", package: "swift-metrics"),
            ]
        ),
        .testTarget(
            name: "HTTPDNSInterceptorTests",
            dependencies: [
                "HTTPDNSInterceptor",
                "HTTPDNSCore",
                "HTTPDNSTesting",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
            ]
        ),
        .testTarget(
            name: "HTTPDNSNIOTests",
            dependencies: [
                "HTTPDNSNIO",
                "HTTPDNSCAres",
                "HTTPDNSCore",
                "HTTPDNSTesting",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
            ]
        ),
        .testTarget(
            name: "HTTPDNSMetricsTests",
            dependencies: [
                "HTTPDNSMetrics",
                "HTTPDNSTesting",
                .product(name: "Prometheus", package: "swift-prometheus"),
            ]
        ),
        .testTarget(
            name: "HTTPDNSWireTests",
            dependencies: ["HTTPDNSWire", "HTTPDNSCore", "HTTPDNSTesting"]
        ),
        .testTarget(
            name: "HTTPDNSClientTests",
            dependencies: [
                "HTTPDNSClient",
                "HTTPDNSCore",
                "HTTPDNSTesting",
                "HTTPDNSWire",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOEmbedded", package: "swift-nio"),
                .product(name: "NIOHPACK", package: "swift-nio-http2"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOHTTP2", package: "swift-nio-http2"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
            ]
        ),
        .testTarget(
            name: "HTTPDNSSettingsTests",
            dependencies: [
                "HTTPDNSSettings", "HTTPDNSCore", "HTTPDNSServer", "HTTPDNSCAres", "HTTPDNSClient", "HTTPDNSInterceptor", "HTTPDNSMetrics",
                .product(name: "Configuration", package: "swift-configuration"),
            ]
        ),
        .testTarget(
            name: "HTTPDNSCAresTests",
            dependencies: ["HTTPDNSSynchronization", "HTTPDNSCAres", "HTTPDNSCore", "HTTPDNSTesting"]
        ),
        .testTarget(
            name: "HTTPDNSServerTests",
            dependencies: [
                "HTTPDNSSynchronization",
                "HTTPDNSServer",
                "HTTPDNSMetrics",
                "HTTPDNSServerTransport",
                "HTTPDNSCore",
                "HTTPDNSTesting",
                "HTTPDNSWire",
                .product(name: "HummingbirdCore", package: "hummingbird"),
                .product(name: "HummingbirdTesting", package: "hummingbird"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOEmbedded", package: "swift-nio"),
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "NIOHPACK", package: "swift-nio-http2"),
                .product(name: "NIOHTTPTypes", package: "swift-nio-extras"),
                .product(name: "Prometheus", package: "swift-prometheus"),
                .product(name: "Crypto", package: "swift-crypto"),
            ]
        ),
        .testTarget(
            name: "HTTPDNSIntegrationTests",
            dependencies: [
                "HTTPDNSSynchronization",
                "HTTPDNSCAres", "HTTPDNSClient", "HTTPDNSCore", "HTTPDNSInterceptor", "HTTPDNSTesting", "HTTPDNSURLSession",
                "HTTPDNSServer",
                "HTTPDNSWire",
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "MetricsTestKit", package: "swift-metrics"),
            ]
        ),
        // The OpenAPI adapter (trait OpenAPI): a ClientTransport over the interceptor.
        .target(
            name: "HTTPDNSOpenAPI",
            dependencies: [
                "HTTPDNSCore",
                "HTTPDNSInterceptor",
                "HTTPDNSNetworking",
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "OpenAPIRuntime", package: "swift-openapi-runtime", condition: .when(traits: ["OpenAPI"])),
            ]
        ),
        // The Vapor adapter (trait Vapor): a Vapor `Client` over the interceptor and its `app.clients` provider.
        .target(
            name: "HTTPDNSVapor",
            dependencies: [
                "HTTPDNSCore",
                "HTTPDNSInterceptor",
                "HTTPDNSNetworking",
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "Vapor", package: "vapor", condition: .when(traits: ["Vapor"])),
            ]
        ),
        .testTarget(
            name: "HTTPDNSOpenAPITests",
            dependencies: [
                "HTTPDNSCore",
                "HTTPDNSInterceptor",
                "HTTPDNSOpenAPI",
                "HTTPDNSTesting",
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "MetricsTestKit", package: "swift-metrics"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "OpenAPIRuntime", package: "swift-openapi-runtime", condition: .when(traits: ["OpenAPI"])),
            ]
        ),
        .testTarget(
            name: "HTTPDNSVaporTests",
            dependencies: [
                "HTTPDNSCore",
                "HTTPDNSInterceptor",
                "HTTPDNSTesting",
                "HTTPDNSVapor",
                .product(name: "MetricsTestKit", package: "swift-metrics"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "Vapor", package: "vapor", condition: .when(traits: ["Vapor"])),
                .product(name: "VaporTesting", package: "vapor", condition: .when(traits: ["Vapor"])),
            ]
        ),
        // HTTPDNSGRPC against real grpc-swift 2 servers over TLS; built with the trait `GRPC` (empty without it).
        .testTarget(
            name: "HTTPDNSGRPCTests",
            dependencies: [
                "HTTPDNSGRPC",
                .target(name: "HTTPDNSCore", condition: .when(traits: ["GRPC"])),
                .target(name: "HTTPDNSSynchronization", condition: .when(traits: ["GRPC"])),
                .target(name: "HTTPDNSTesting", condition: .when(traits: ["GRPC"])),
                .product(name: "GRPCCore", package: "grpc-swift-2", condition: .when(traits: ["GRPC"])),
                .product(name: "GRPCNIOTransportHTTP2", package: "grpc-swift-nio-transport", condition: .when(traits: ["GRPC"])),
                .product(name: "NIOCore", package: "swift-nio", condition: .when(traits: ["GRPC"])),
                .product(name: "NIOTLS", package: "swift-nio", condition: .when(traits: ["GRPC"])),
            ]
        ),
    ],
    swiftLanguageModes: [.v6]
)

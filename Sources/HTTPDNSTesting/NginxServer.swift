import Foundation

/// A real nginx (Debian's `nginx-light`) serving HTTPS name-based virtual hosts on a 127.0.0.x address and a high
/// port, with a certificate made at test time, and the same over plain HTTP on the next port. Every request is answered `200` with what the server saw:
/// `sni=<TLS server name> host=<the Host header as sent>`, so a test can check both of what a client sent. Beyond
/// that:
/// - `/redirect/STATUS/NAME/PATH` redirects with STATUS (301, 302, 303, 307, 308) to `https://NAME:port/PATH`;
///   `/loop` redirects to itself, and `/insecure` to http;
/// - `/set-cookie` sets the cookie `session=abc`, and `/cookie` answers `cookie=` and the Cookie field it got;
/// - `/echo` answers `method=METHOD body=BODY` with the request's own method and body (up to 1 MiB), and the SNI and
///   Host in `X-Seen`;
/// - `/large` is ``largeFileBytes`` of zeros.
///
/// One process (`master_process off`), in the foreground, logging to stderr; stopped by ``stop()``.
public final class NginxServer: Sendable {
    /// The address nginx listens on, and its port.
    public let address: String
    public let port: Int
    /// The port of the same server over plain HTTP/1.1: ``port`` + 1.
    public var plainPort: Int { port + 1 }
    /// The port of the same server over TLS with HTTP/1.1 only (ALPN offers no `h2`): ``port`` + 2.
    public var http1Port: Int { port + 2 }
    /// The size of `/large`, a file of zeros.
    public static let largeFileBytes = 50 * 1024 * 1024
    private let process: ChildProcess
    private let directory: URL

    /// Starts nginx on a port of its own.
    /// - Parameters:
    ///   - names: its `server_name`s.
    ///   - certificate: the PEM certificate file it serves.
    ///   - key: the certificate's PEM key file.
    ///   - address: where it listens, when given (a certificate for the address needs it known beforehand); else
    ///     a random 127.0.0.x.
    ///   - keepaliveRequests: the requests nginx serves on a connection before it closes it (HTTP/2: a GOAWAY);
    ///     nginx's default is 1,000.
    ///   - ipv6: whether it also listens on `[::1]` at the same port, over TLS.
    public static func start(
        names: [String],
        certificate: String,
        key: String,
        address: String? = nil,
        keepaliveRequests: Int = 1000,
        ipv6: Bool = false
    ) async throws -> NginxServer {
        try await LoopbackPeer.start { randomAddress, port in
            try await NginxServer(
                address: address ?? randomAddress, port: port, names: names, certificate: certificate, key: key,
                keepaliveRequests: keepaliveRequests, ipv6: ipv6
            )
        }
    }

    private init(
        address: String,
        port: Int,
        names: [String],
        certificate: String,
        key: String,
        keepaliveRequests: Int,
        ipv6: Bool
    ) async throws {
        guard let executable = ChildProcess.find("nginx") else {
            throw PeerStartError(
                description: "nginx is not installed: run the install command at the top of README.md (apt-get install nginx-light)",
                retryable: false
            )
        }
        self.address = address
        self.port = port
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("httpdns-nginx-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let path = directory.path
        let redirects = [301, 302, 303, 307, 308].map { status in
            "location ~ ^/redirect/\(status)/([^/]+)/(.*)$ { return \(status) https://$1:$server_port/$2; }"
        }.joined(separator: " ")
        let configuration = """
            daemon off;
            master_process off;
            worker_processes 1;
            error_log stderr notice;
            pid \(path)/nginx.pid;
            events { worker_connections 256; }
            http {
                access_log off;
                keepalive_requests \(keepaliveRequests);
                client_body_temp_path \(path)/body;
                proxy_temp_path \(path)/proxy;
                fastcgi_temp_path \(path)/fastcgi;
                uwsgi_temp_path \(path)/uwsgi;
                scgi_temp_path \(path)/scgi;
                map $arg_type $dnstype { A 1; AAAA 28; default 0; }
                map $arg_type $dnsdata { A 127.0.0.9; AAAA ::9; default ""; }
                server {
                    listen \(address):\(port) ssl http2;
                    listen \(address):\(port + 1);
                    listen \(address):\(port + 2) ssl;
                    \(ipv6 ? "listen [::1]:\(port) ssl http2;" : "")
                    server_name \(names.joined(separator: " "));
                    ssl_certificate \(certificate);
                    ssl_certificate_key \(key);
                    default_type text/plain;
                    location / { return 200 "sni=$ssl_server_name host=$http_host\\n"; }
                    # /redirect/STATUS/NAME/PATH: a STATUS redirect to https://NAME:port/PATH.
                    \(redirects)
                    location = /loop { return 302 /loop; }
                    location = /set-cookie { add_header Set-Cookie "session=abc; Path=/" always; return 200 "set\\n"; }
                    location = /cookie { return 200 "cookie=$http_cookie\\n"; }
                    location = /insecure { return 302 http://$host:$server_port/; }
                    # The method and body as received, and the SNI and Host: the body is read by the proxy module
                    # and put into the sink's answer in place of its marker.
                    location = /echo {
                        client_body_buffer_size 1m;
                        client_body_in_single_buffer on;
                        proxy_pass http://unix:\(path)/sink.sock:/;
                        sub_filter_types *;
                        sub_filter '%%' '$request_body';
                        sub_filter_once on;
                        proxy_set_header Accept-Encoding "";
                        add_header X-Seen "sni=$ssl_server_name host=$http_host" always;
                    }
                    # A JSON DNS answer (Google's format) to any name: 127.0.0.9 for A, ::9 for AAAA, TTL 300; for a
                    # name that starts with "large", /large instead.
                    location = /resolve {
                        if ($arg_name ~ "^large") { rewrite ^ /large last; }
                        default_type application/dns-json;
                        return 200 '{"Status":0,"Question":[{"name":"$arg_name","type":$dnstype}],"Answer":[{"name":"$arg_name","type":$dnstype,"TTL":300,"data":"$dnsdata"}]}';
                    }
                    # A file of \(Self.largeFileBytes) bytes, streamed.
                    location = /large { alias \(path)/large; }
                }
                server {
                    listen unix:\(path)/sink.sock;
                    location / { return 200 "method=$request_method body=%%"; }
                }
            }
            """
        // Sparse: a large body without writing it to disk.
        guard FileManager.default.createFile(atPath: "\(path)/large", contents: nil),
            truncate("\(path)/large", off_t(Self.largeFileBytes)) == 0
        else { throw PeerStartError(description: "cannot make \(path)/large: \(String(cString: strerror(errno)))", retryable: false) }
        let file = directory.appendingPathComponent("nginx.conf")
        try configuration.write(to: file, atomically: true, encoding: .utf8)
        process = try ChildProcess(executable: executable, arguments: ["-c", file.path, "-e", "stderr"])
        // nginx reports its limits once the configuration is loaded and the listening socket bound.
        let (found, output) = await process.waitForStderr(containing: "getrlimit")
        guard found else {
            process.stop(signal: SIGKILL)
            try? FileManager.default.removeItem(at: directory)
            throw PeerStartError(description: "nginx did not start: \(output)", retryable: output.contains("Address already in use"))
        }
        process.discardStderr()
    }

    /// Stops nginx and removes its files. Once.
    public func stop() {
        process.stop()
        try? FileManager.default.removeItem(at: directory)
    }
}

/// Runs `body` with an nginx serving `names` over TLS, and stops it afterwards whatever happens.
public func withNginx<T>(
    names: [String],
    certificate: String,
    key: String,
    keepaliveRequests: Int = 1000,
    ipv6: Bool = false,
    _ body: (NginxServer) async throws -> T
) async throws -> T {
    try await LoopbackPeer.run(
        try await NginxServer.start(names: names, certificate: certificate, key: key, keepaliveRequests: keepaliveRequests, ipv6: ipv6),
        stop: { $0.stop() },
        body
    )
}

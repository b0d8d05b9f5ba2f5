import NIOCore

/// How a service connection reads from its socket: one read per readable event, into a buffer of at most 16 KiB.
///
/// SwiftNIO keeps a pool of read buffers for each connection, as many as its reads per event (4 by default), and each
/// keeps the size its allocator grew to (64 KiB at most) for as long as the connection lives. A client that streams
/// bytes at a connection (an HTTP/1.1 body that never ends, or HTTP/2 frames) grows them, and they stay: 1,000 such
/// TLS connections held 387 MiB, 135 MiB with these options (docs/RELIABILITY.md, "Read buffers, and HTTP/1.1
/// bodies"). Requests here are a few hundred bytes; one buffer of at most 16 KiB, about a TLS record, is plenty for
/// them, and bounds what a connection keeps to that. (The allocator rounds its sizes up to powers of two.)
enum ConnectionReads {
    static let maxBufferBytes = 16_384

    static func configure(_ channel: any Channel) throws {
        guard let options = channel.syncOptions else { return }
        try options.setOption(ChannelOptions.maxMessagesPerRead, value: 1)
        try options.setOption(
            ChannelOptions.recvAllocator,
            value: AdaptiveRecvByteBufferAllocator(minimum: 64, initial: 2_048, maximum: maxBufferBytes)
        )
    }
}

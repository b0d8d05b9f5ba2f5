#if canImport(Glibc)
    import Glibc
#endif

/// The function libFuzzer calls with each input: its bytes, and their count.
public typealias FuzzTarget = @convention(c) (UnsafePointer<UInt8>?, Int) -> CInt

@_silgen_name("LLVMFuzzerRunDriver")
private func LLVMFuzzerRunDriver(
    _ argc: UnsafeMutablePointer<CInt>,
    _ argv: UnsafeMutablePointer<UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>>,
    _ callback: FuzzTarget
) -> CInt

/// Runs libFuzzer's driver with this process's arguments over `target`, and exits with its status.
///
/// SwiftPM gives an executable's `main` to the module's top-level code, so libFuzzer's own `main` never runs; its
/// driver is started from here instead, which takes the same flags (`-runs=`, `-max_total_time=`, corpus
/// directories …).
public func runFuzzer(_ target: @escaping FuzzTarget) -> Never {
    registered = target
    var argc = CommandLine.argc
    var argv = CommandLine.unsafeArgv
    exit(LLVMFuzzerRunDriver(&argc, &argv, target))
}

nonisolated(unsafe) private var registered: FuzzTarget?

/// libFuzzer's runtime refers to this symbol; it runs the target ``runFuzzer(_:)`` was given.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzOneInput(_ start: UnsafePointer<UInt8>?, _ count: Int) -> CInt {
    registered?(start, count) ?? 0
}

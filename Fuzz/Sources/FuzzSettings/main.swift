import Dispatch
import FuzzDriver
import Glibc
import HTTPDNSSettings

/// The command line's settings as `serve`, `resolve` and `health` read them: the input as the JSON configuration
/// file, then as the text of one flag (the first byte picks which; flags and environment variables share the
/// reading of text). The flag's text is the input after its first byte. A `SettingError` is expected; a crash, a
/// hang or a leak is a finding.
/// The input's file, in a directory of this process's own (mkdtemp), removed at exit.
let directory: String = {
    var template = Array("/tmp/httpdns-fuzz-settings.XXXXXX".utf8CString)
    return template.withUnsafeMutableBufferPointer { buffer in
        guard let made = mkdtemp(buffer.baseAddress!) else { fatalError("mkdtemp: \(String(cString: strerror(errno)))") }
        return String(cString: made)
    }
}()
let file = "\(directory)/settings.json"
atexit {
    unlink(file)
    rmdir(directory)
}
let tables: [(String, [Setting])] = [("serve", ServeSettings.table), ("resolve", ResolveSettings.table), ("health", HealthSettings.table)]
let every = tables.flatMap(\.1)

/// Reads every setting of `table` as its command would; errors are the point, so they are dropped.
func read(_ command: String, _ reader: SettingsReader) async {
    switch command {
    case "serve": _ = try? await ServeSettings(reading: reader)
    case "resolve": _ = try? await ResolveSettings(reading: reader)
    default: _ = try? await HealthSettings(reading: reader)
    }
}

runFuzzer { start, count in
    let bytes = UnsafeBufferPointer(start: start, count: count)
    guard FileManagerless.write(bytes, to: file) else { fatalError("the harness cannot write \(file)") }
    let flagText = String(decoding: bytes.dropFirst(), as: UTF8.self)
    let flagged = count > 0 ? every[Int(bytes[0]) % every.count] : nil
    let done = DispatchSemaphore(value: 0)
    // Detached: top-level code is the main actor's, and the main thread waits below.
    Task.detached {
        for (command, table) in tables {
            if let reader = try? SettingsReader(settings: table, file: file, environment: [:], flags: [:]) { await read(command, reader) }
            if let flagged, table.contains(where: { $0.key == flagged.key }),
                let reader = try? SettingsReader(settings: table, file: nil, environment: [:], flags: [flagged.key: [flagText]])
            {
                await read(command, reader)
            }
        }
        done.signal()
    }
    done.wait()
    return 0
}

/// Writing the input with open/write, so a run costs no Foundation.
enum FileManagerless {
    static func write(_ bytes: UnsafeBufferPointer<UInt8>, to path: String) -> Bool {
        let descriptor = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else { return false }
        defer { close(descriptor) }
        var offset = 0
        while offset < bytes.count {
            let wrote = Glibc.write(descriptor, bytes.baseAddress! + offset, bytes.count - offset)
            guard wrote > 0 else { return false }
            offset += wrote
        }
        return true
    }
}

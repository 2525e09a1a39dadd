@_spi(Files) import Defaults
import Dispatch
import Foundation
import Synchronization

/// The last values a backend saw in etcd, kept in a file, so a suite opened while etcd is out of
/// reach starts from them rather than from its defaults.
///
/// One JSON object: `{"revision": N, "values": {...}}`, replaced whole by rename (never half
/// written), on a queue of its own, after every load and every change the backend saw.
final class EtcdCache: Sendable {
    let url: URL
    private let queue = DispatchQueue(label: "DefaultsEtcd.cache")

    init(url: URL) {
        self.url = url
        Self.live.withLock { live in
            live.removeAll { $0.object == nil }
            live.append(WeakReference(self))
        }
        _ = Self.waitsAtExit
    }

    /// The caches of the process, so its exit waits for their writes.
    private static let live = Mutex<[WeakReference]>([])

    /// A reference that does not keep its cache alive.
    private struct WeakReference: Sendable {
        weak let object: EtcdCache?
        init(_ object: EtcdCache) { self.object = object }
    }

    /// Makes the process's exit wait for every cache's writes: one that exited between writing
    /// the temporary file and renaming it left the temporary file behind (a program that sets a
    /// value and exits did, most times).
    private static let waitsAtExit: Void = {
        atexit {
            for cache in EtcdCache.live.withLock({ $0.compactMap(\.object) }) { cache.waitForWrites() }
        }
    }()

    /// The cache file for `prefix` at `endpoints`: in `$XDG_CACHE_HOME/defaults-etcd/` (or
    /// `~/.cache/defaults-etcd/`), named after the prefix and a hash of the endpoints.
    static func defaultURL(endpoints: [URL], prefix: String) -> URL {
        let environment = ProcessInfo.processInfo.environment
        let base =
            environment["XDG_CACHE_HOME"].flatMap { $0.hasPrefix("/") ? URL(fileURLWithPath: $0) : nil }
            ?? URL(fileURLWithPath: environment["HOME"] ?? NSHomeDirectory()).appendingPathComponent(".cache")
        let readable = String(prefix.map { $0.isLetter || $0.isNumber || $0 == "-" ? $0 : "_" }.prefix(80))
        // FNV-1a, stable across runs (Swift's Hasher is seeded per process).
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in (endpoints.map(\.absoluteString).sorted().joined(separator: ",") + "\n" + prefix).utf8 {
            hash = (hash ^ UInt64(byte)) &* 0x100_0000_01b3
        }
        let name = "\(readable)-\(String(hash, radix: 16)).json"
        return base.appendingPathComponent("defaults-etcd").appendingPathComponent(name)
    }

    /// What the file holds, if it holds a cache.
    ///
    /// Read without blocking, and only a regular file of at most 32 MiB: anything else in its
    /// place is no cache.
    func read() -> (values: [String: Defaults.JSONValue], revision: Int64)? {
        guard let bytes = try? Defaults._contentsOfRegularFile(atPath: url.path),
            case .object(let members)? = try? Defaults.JSONValue(parsing: bytes),
            case .object(let values)? = members["values"]
        else { return nil }
        var revision: Int64 = 0
        if case .number(let number)? = members["revision"] { revision = Int64(number) ?? 0 }
        return (values, revision)
    }

    /// Replaces the file with `values` at `revision`, later, on the cache's queue.
    ///
    /// - Parameter problem: Told when the file cannot be written.
    func write(
        _ values: [String: Defaults.JSONValue],
        revision: Int64,
        problem: @escaping @Sendable (String) -> Void
    ) {
        let url = url
        queue.async {
            let text = Defaults.JSONValue
                .object([
                    "revision": .number(String(revision)), "values": .object(values),
                ])
                .description
            let folder = url.deletingLastPathComponent()
            let temporary = folder.appendingPathComponent(".\(url.lastPathComponent).\(UUID().uuidString)")
            do {
                try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
                Self.removeStaleTemporaryFiles(of: url)
                try Data(text.utf8).write(to: temporary)
                if rename(temporary.path, url.path) != 0 {
                    let reason = String(cString: strerror(errno))
                    try? FileManager.default.removeItem(at: temporary)
                    problem("could not replace the cache file \(url.path): \(reason)")
                }
            } catch {
                try? FileManager.default.removeItem(at: temporary)
                problem("could not write the cache file \(url.path): \(error)")
            }
        }
    }

    /// Removes the temporary files of writes of `url` that a process killed while writing left
    /// (older than a minute: a write under way elsewhere takes milliseconds).
    private static func removeStaleTemporaryFiles(of url: URL) {
        let folder = url.deletingLastPathComponent()
        let prefix = ".\(url.lastPathComponent)."
        guard let names = try? FileManager.default.contentsOfDirectory(atPath: folder.path) else { return }
        for name in names where name.hasPrefix(prefix) {
            let path = folder.appendingPathComponent(name).path
            var info = stat()
            guard lstat(path, &info) == 0, (info.st_mode & S_IFMT) == S_IFREG,
                time(nil) - info.st_mtim.tv_sec > 60
            else { continue }
            unlink(path)
        }
    }

    /// Returns once every write asked for so far is done.
    func waitForWrites() {
        queue.sync {}
    }
}

import Defaults
import Foundation
import Testing

/// The file where a backend keeps the last values it saw.
@Suite struct EtcdCacheFileTests {
    /// A program that sets a value and exits at once, many times: the cache file is replaced each
    /// time, and no temporary file of a write is left beside it.
    @Test func aProgramThatExitsRightAfterAWriteLeavesNoTemporaryFileBehind() async throws {
        let server = try EtcdServer()
        let folder = try temporaryFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let cache = folder.appendingPathComponent("cache")
        for value in 1...10 {
            let run = try await runProduct(
                "etcd-service",
                ["--set", "\(value)"],
                environment: ["ETCD_ENDPOINTS": server.clientURL.absoluteString, "XDG_CACHE_HOME": cache.path]
            )
            #expect(run.status == 0, "\(run)")
        }
        let names = try FileManager.default.contentsOfDirectory(
            atPath: cache.appendingPathComponent("defaults-etcd").path
        )
        #expect(names.count == 1 && !names[0].hasPrefix("."), "\(names)")
    }
}

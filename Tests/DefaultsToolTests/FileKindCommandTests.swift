import Defaults
import DefaultsTestSupport
import Foundation
import Testing

/// `defaults` never waits on a FIFO, nor reads a device, where a settings file or a schema
/// should be: it says what stands there, and ends.
@Suite struct FileKindCommandTests {
    /// Found by a black-box probe: under a file size limit (`ulimit -f`, the catalogue's way to
    /// fill a disk) the write raised SIGXFSZ, which killed the command (status 153).
    @Test(
        .disabled(
            if: isThreadSanitized,
            "ThreadSanitizer's runtime faults (SIGBUS) under a 512-byte file size limit before the command runs"
        )
    )
    func aWriteLargerThanTheProcessMayWriteIsRefusedNotKilled() async throws {
        try await withCommand { defaults in
            try defaults.seed("app", #"{"kept" : 1}"#)
            let before = try defaults.bytes("app")
            // `ulimit -f 1`: 512 bytes; the value alone is 2,000.
            let result = try await RunningHelper(
                [
                    "-c", #"ulimit -f 1; exec "$0" "$@""#, HelperProcess.builtProduct("defaults").path,
                    "write", "app", "big", "--string", String(repeating: "x", count: 2000),
                ],
                environment: ["XDG_CONFIG_HOME": defaults.configHome.path],
                executable: URL(fileURLWithPath: "/bin/sh")
            )
            .waitForExit()
            #expect(result.status == 3, "\(result.status) \(result.errorOutput)")
            expectOneErrorLine(result, containing: "ulimit -f")
            #expect(try defaults.bytes("app") == before)
            // Without the limit, the same write goes through.
            let unlimited = try await defaults.run(
                "write",
                "app",
                "big",
                "--string",
                String(repeating: "x", count: 2000)
            )
            #expect(unlimited.status == 0, "\(unlimited.errorOutput)")
        }
    }

    @Test func aFIFOWhereTheSettingsFileOrTheSchemaShouldBeIsReportedWithoutWaiting() async throws {
        try await withCommand { defaults in
            try defaults.seed("app", #"{"port": 1}"#)
            let file = defaults.file("app")
            try FileManager.default.removeItem(at: file)
            try makeFIFO(at: file)
            defer { releaseFIFO(at: file) }
            let read = try await defaults.run("read", "app")
            #expect(read.status == 3, "\(read.errorOutput)")
            expectOneErrorLine(read, containing: "opening: it is a FIFO (a named pipe), not a regular file")
            // The schema beside a good file.
            try FileManager.default.removeItem(at: file)
            try defaults.seed("app", #"{"port": 1}"#)
            let schema = Defaults.Suite.schemaFileURL(forSettingsFile: file)
            try makeFIFO(at: schema)
            defer { releaseFIFO(at: schema) }
            let described = try await defaults.run("describe", "app")
            #expect(described.status == 3, "\(described.errorOutput)")
            expectOneErrorLine(described, containing: "it is a FIFO")
            // An import from /dev/zero.
            try FileManager.default.removeItem(at: schema)
            let imported = try await defaults.run("import", "app", "/dev/zero")
            expectOneErrorLine(imported, containing: "it is a character device, not a regular file")
        }
    }
}

/// Whether this is the ThreadSanitizer build (`scripts/test-sanitized thread` defines
/// `DEFAULTS_PTHREAD_LOCKS` for it alone).
#if DEFAULTS_PTHREAD_LOCKS
private let isThreadSanitized = true
#else
private let isThreadSanitized = false
#endif

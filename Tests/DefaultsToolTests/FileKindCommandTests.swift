import Defaults
import DefaultsTestSupport
import Foundation
import Testing

/// `defaults` never waits on a FIFO, nor reads a device, where a settings file or a schema
/// should be: it says what stands there, and ends.
@Suite struct FileKindCommandTests {
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

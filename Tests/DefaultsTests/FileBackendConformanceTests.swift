import DefaultsBackendTesting
import DefaultsTestSupport
import Foundation
import Testing

// @testable: runs the conformance checks on the file backend itself (`FileBackend`, `FileStorage`).
@testable import Defaults

/// The JSON file is one backend among others: it passes the checks any backend must.
@Suite struct FileBackendConformanceTests {
    @Test func theFileBackendPassesTheConformanceChecks() throws {
        try withTemporaryDirectory { directory in
            // NB: a regular file where a folder should be: nothing under it can be read or made.
            let blocker = directory.appendingPathComponent("not-a-folder")
            try Data("x".utf8).write(to: blocker)
            try BackendConformance(
                makeBackend: { space in
                    let url = directory.appendingPathComponent(space).appendingPathComponent("settings.json")
                    return FileBackend(storage: FileStorage(url: url))
                },
                makeUnreachableBackend: { space in
                    let url = blocker.appendingPathComponent(space).appendingPathComponent("settings.json")
                    return FileBackend(storage: FileStorage(url: url))
                }
            )
            .run()
        }
    }
}

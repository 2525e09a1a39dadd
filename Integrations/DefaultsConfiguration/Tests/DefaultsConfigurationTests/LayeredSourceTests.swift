import Configuration
import DefaultsConfiguration
import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// The provider reads a suite as programs read it: a ConfigMap volume that kubelet updates, and
/// system files with locks beneath a user's file, all followed live, with nothing to do here.
@Suite struct LayeredSourceTests {
    /// Points `<volume>/..data` at a new directory holding `settings.json` with `text`, as kubelet
    /// does (`..data_tmp` renamed over `..data`), and deletes the directory it pointed at before.
    private func publish(_ text: String, in volume: URL, revision: Int) throws {
        let name = "..2026_11_24_10_00_00.\(revision)"
        try save(text, to: volume.appendingPathComponent("\(name)/settings.json"))
        let data = volume.appendingPathComponent("..data").path
        let previous = try? FileManager.default.destinationOfSymbolicLink(atPath: data)
        let staged = volume.appendingPathComponent("..data_tmp").path
        #expect(symlink(name, staged) == 0)
        #expect(rename(staged, data) == 0)
        if let previous { try FileManager.default.removeItem(at: volume.appendingPathComponent(previous)) }
    }

    @Test func aConfigMapUpdateReachesConfigReaderWatchInt() async throws {
        try await withTemporaryDirectory { directory in
            let volume = directory.appendingPathComponent("config", isDirectory: true)
            try publish(#"{"http" : {"port" : 8080}}"#, in: volume, revision: 1)
            let file = volume.appendingPathComponent("settings.json")
            #expect(symlink("..data/settings.json", file.path) == 0)
            let config = ConfigReader(provider: DefaultsProvider(suite: Defaults.Suite(fileURL: file)))
            let ports = Mailbox<Int>()
            try await config.watchInt(forKey: "http.port", default: 0) { updates in
                let copying = Task { for await port in updates { ports.put(port) } }
                defer { copying.cancel() }
                #expect(await ports.take() == 8080)
                for revision in 2...4 {
                    try publish(#"{"http" : {"port" : \#(9000 + revision)}}"#, in: volume, revision: revision)
                    #expect(await ports.take() == 9000 + revision)
                }
                #expect(ports.isEmpty, "never the default in between")
            }
        }
    }

    @Test func aSystemFilesValueAndLockReachTheReader() async throws {
        try await withTemporaryDirectory { directory in
            let user = directory.appendingPathComponent("home/service/settings.json")
            let system = directory.appendingPathComponent("etc/service/settings.json")
            try save(#"{"log.level" : "debug", "workers" : 16}"#, to: user)
            try save(#"{"" : {"locked" : ["workers"]}, "workers" : 4, "timeout" : 30}"#, to: system)
            let suite = Defaults.Suite(fileURL: user, systemFiles: [system])
            let config = ConfigReader(provider: DefaultsProvider(suite: suite))
            #expect(config.string(forKey: "log.level") == "debug")
            #expect(config.int(forKey: "workers") == 4)
            #expect(config.int(forKey: "timeout") == 30)

            let workers = Mailbox<Int>()
            try await config.watchInt(forKey: "workers", default: 0) { updates in
                let copying = Task { for await count in updates { workers.put(count) } }
                defer { copying.cancel() }
                #expect(await workers.take() == 4)
                // The administrator lifts the lock: the user's value is read again.
                try save(#"{"workers" : 4, "timeout" : 30}"#, to: system)
                #expect(await workers.take() == 16)
            }
        }
    }
}

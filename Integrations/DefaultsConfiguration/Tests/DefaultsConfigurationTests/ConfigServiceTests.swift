import Foundation
import Testing

/// Runs the example service as a person would, and changes its settings from other processes and
/// by editing its file.
@Suite struct ConfigServiceTests {
    @Test func printsEachChangeMadeByTheDefaultsCommandOrAnEdit() async throws {
        try await withTemporaryDirectory { configHome in
            let environment = ["XDG_CONFIG_HOME": configHome.path]
            let service = try RunningProcess("config-service", environment: environment)
            let file = configHome.appendingPathComponent("config-service/settings.json")
            #expect(await service.lines.take()?.hasPrefix("config-service: settings in \(file.path)") == true)
            #expect(await service.lines.take(2).sorted() == ["http.port = 8080", "log.level = info"])

            let port = try await run(
                "defaults",
                ["write", "config-service", "http.port", "9090"],
                environment: environment
            )
            #expect(port.status == 0, "\(port.errorOutput)")
            #expect(await service.lines.take() == "http.port = 9090")

            let level = try await run(
                "defaults",
                ["write", "config-service", "log.level", "--string", "debug"],
                environment: environment
            )
            #expect(level.status == 0, "\(level.errorOutput)")
            #expect(await service.lines.take() == "log.level = debug")

            // A person rewrites the file with nested objects instead.
            try save(#"{"http" : {"port" : 7070}, "log" : {"level" : "warn"}}"#, to: file)
            #expect(await service.lines.take(2).sorted() == ["http.port = 7070", "log.level = warn"])
            #expect(await service.stop() != nil)
        }
    }

    @Test func theCommandLineAndTheEnvironmentWinOverTheFile() async throws {
        try await withTemporaryDirectory { configHome in
            let file = configHome.appendingPathComponent("config-service/settings.json")
            try save(#"{"http.port" : 9090, "log.level" : "debug"}"#, to: file)
            let service = try RunningProcess(
                "config-service",
                ["--http-port", "7000"],
                environment: ["XDG_CONFIG_HOME": configHome.path, "LOG_LEVEL": "error"]
            )
            _ = await service.lines.take()
            #expect(await service.lines.take(2).sorted() == ["http.port = 7000", "log.level = error"])
            #expect(await service.stop() != nil)
        }
    }
}

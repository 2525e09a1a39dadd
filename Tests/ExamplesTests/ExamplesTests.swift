import DefaultsTestSupport
import Foundation
import Testing

/// Runs each example's binary, as a user would, in a fresh XDG_CONFIG_HOME.
@Suite struct ExamplesTests {
    struct Run {
        let output: String
        let configHome: URL
        var lines: [String] { output.split(separator: "\n", omittingEmptySubsequences: false).map(String.init) }
    }

    /// Runs the example and waits for it, off the cooperative pool: a blocked pool thread (there
    /// are two) would hold up other tests' tasks meanwhile.
    private func run(_ example: String) async throws -> Run {
        try await offThePool { Result { try runBlocking(example) } }.get()
    }

    /// The built example next to the test binary (SwiftPM puts every product in one folder).
    private func runBlocking(_ example: String) throws -> Run {
        let binaries = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath().deletingLastPathComponent()
        let configHome = FileManager.default.temporaryDirectory.appendingPathComponent("examples-\(UUID())")
        try FileManager.default.createDirectory(at: configHome, withIntermediateDirectories: true)
        let process = Process()
        process.executableURL = binaries.appendingPathComponent(example)
        var environment = ProcessInfo.processInfo.environment
        environment["XDG_CONFIG_HOME"] = configHome.path
        process.environment = environment
        let pipe = Pipe()
        process.standardOutput = pipe
        try process.run()
        let data = pipe.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        #expect(process.terminationStatus == 0, "\(example) exited with \(process.terminationStatus)")
        return Run(output: String(decoding: data, as: UTF8.self), configHome: configHome)
    }

    @Test func settingsBasicsWritesTheFileItPrints() async throws {
        let run = try await run("settings-basics")
        defer { try? FileManager.default.removeItem(at: run.configHome) }
        #expect(run.lines.contains("launchCount starts at its default: 0"))
        #expect(run.lines.contains("after reset: volume 0.8, nickname nil"))
        #expect(run.lines.contains("after the transaction: window Window(width: 1280, height: 800), launchCount 2"))
        let file = run.configHome.appendingPathComponent("settings-basics/settings.json")
        #expect(run.lines.contains("wrote \(file.path):"))
        let onDisk = try String(contentsOf: file, encoding: .utf8)
        #expect(run.output.hasSuffix(onDisk))
        #expect(onDisk.contains("\"theme\" : \"light\""))
        #expect(onDisk.contains("\"width\" : 1280"))
        let schema = run.configHome.appendingPathComponent("settings-basics/settings.schema.json")
        #expect(run.lines.first == "published the schema \(schema.path)")
        #expect(try await SchemaValidator.failures(of: [file], against: schema).isEmpty)
    }

    @Test func modelClassesReactToEachOtherAndReleaseSubscriptions() async throws {
        let run = try await run("model-classes")
        defer { try? FileManager.default.removeItem(at: run.configHome) }
        let lines = run.lines
        let leftWrite = try #require(lines.firstIndex(of: "left writes fontSize = 14"))
        #expect(
            lines[leftWrite + 1...leftWrite + 2].sorted() == [
                "  left sees fontSize 12 -> 14", "  right sees fontSize 12 -> 14",
            ]
        )
        #expect(lines.contains("left reads 16, right reads 16"))
        #expect(lines.contains("without withoutPropagation: 6 calls (cut off by a guard), zoom = 160"))
        #expect(lines.contains("with withoutPropagation: 1 call, zoom = 210"))
        #expect(lines.contains("subscriptions on ticks with 1000 live owners: 1000"))
        #expect(lines.contains("after the owners are released and ticks is written: 0"))
        let swept = try #require(lines.first { $0.hasPrefix("100000 owners of accent made and released") })
        let left = try #require(Int(swept.split(separator: " ").dropLast().last ?? ""))
        #expect(left <= 1024)
    }

    @Test func observableViewModelReRendersForEveryKindOfChange() async throws {
        let run = try await run("observable-viewmodel")
        defer { try? FileManager.default.removeItem(at: run.configHome) }
        let lines = run.lines
        #expect(lines.contains("render [Editor — light, 12 pt]"))
        #expect(lines.contains("after another view-model sets theme:   render [Editor — dark, 12 pt]"))
        #expect(lines.contains("after Defaults[.fontSize] = 16:        render [Editor — dark, 16 pt]"))
        #expect(lines.contains("after a transaction changing both:     render [Editor — solarized, 18 pt]"))
        #expect(lines.contains("after the view-model's own write:      render [Editor — solarized, 20 pt]"))
        #expect(lines.contains("onChange calls after Defaults[.theme] = \"light\": 1"))
        #expect(lines.contains("onChange calls after a write inside withoutPropagation: 1 (not reported)"))
        #expect(lines.contains("render now [Editor — light, 12 pt]"))
    }

    @Test func serviceTakesSettingsForOneRunFromItsCommandLineAndEnvironment() async throws {
        try await withTemporaryDirectory(prefix: "examples") { configHome in
            let service = try RunningHelper(
                ["--watch", "-port", "7000"],
                environment: [
                    "XDG_CONFIG_HOME": configHome.path, "SERVICE_RELOAD_WORKERS": "4",
                    "SERVICE_RELOAD_PORT": "7001",  // The command line wins.
                ],
                program: "service-reload"
            )
            defer { service.send(SIGTERM) }
            #expect(await service.nextLine() == "serving on 127.0.0.1:7000 with 4 workers, log level info")
            #expect(await service.nextLine()?.hasPrefix("watching ") == true)
            // Nothing was written for the overrides.
            let file = configHome.appendingPathComponent("service-reload/settings.json")
            #expect(!FileManager.default.fileExists(atPath: file.path))
        }
    }

    @Test func serviceFollowsItsConfigMapThroughEveryUpdate() async throws {
        try await withTemporaryDirectory(prefix: "examples") { directory in
            var volume = try ConfigMapVolume(
                at: directory.appendingPathComponent("config"),
                files: ["settings.json": #"{"port" : 9000, "workers" : 3}"#]
            )
            let file = volume.url(of: "settings.json")
            let service = try RunningHelper(
                [],
                environment: ["SERVICE_RELOAD_SETTINGS_FILE": file.path],
                program: "service-reload"
            )
            defer { service.send(SIGTERM) }
            #expect(await service.nextLine() == "serving on 127.0.0.1:9000 with 3 workers, log level info")
            #expect(await service.nextLine() == "watching \(file.path); edit it, or write to it from another process")
            #expect(await service.nextLine() == "  host from the program's default")
            #expect(await service.nextLine() == "  port from the user's file \(file.path)")
            _ = await service.line { $0.hasPrefix("  logLevel") }
            for port in [9001, 9002] {
                try volume.update(["settings.json": #"{"port" : \#(port), "workers" : 3}"#])
                #expect(await service.nextLine() == "reload: port -> 127.0.0.1:\(port), 3 workers")
            }
        }
    }

    @Test func serviceReloadsOncePerBurst() async throws {
        let run = try await run("service-reload")
        defer { try? FileManager.default.removeItem(at: run.configHome) }
        let reloads = run.lines.filter { $0.hasPrefix("reload: ") }
        // A transaction is one change, and the operator's save another: one reload each.
        #expect(reloads.first == "reload: host, logLevel, port, timeout, workers -> 0.0.0.0:9090, 8 workers")
        // NB: a burst reload that fired late may join the save's (then it names `port` too).
        #expect(
            reloads.last == "reload: logLevel, workers -> 0.0.0.0:11000, 4 workers"
                || reloads.last == "reload: logLevel, port, workers -> 0.0.0.0:11000, 4 workers",
            "\(reloads)"
        )
        // NB: the burst reloads once unless its writer was held up past the 100 ms quiet period on
        // the real clock (a loaded machine): then once more for each such pause, each with what
        // it had, never for each write. Exactly once per quiet period is DebounceTests' to show,
        // on a clock of their own.
        let burst = reloads.dropFirst().dropLast()
        #expect(!burst.isEmpty && burst.count < 1000, "\(reloads)")
        #expect(
            burst.allSatisfy {
                $0.hasPrefix("reload: port, workers -> ") || $0.hasPrefix("reload: port -> ")
                    || $0.hasPrefix("reload: workers -> ")
            },
            "\(reloads)"
        )
        #expect(burst.last?.hasSuffix("-> 0.0.0.0:11000, 1000 workers") == true, "\(reloads)")
    }

    /// The sindresorhus/Defaults README examples (Tests/ReadmeExamples) print what the README's
    /// `//=>` comments say, except where this package differs on purpose, noted below.
    @Test func sindresorhusReadmeExamplesPrintWhatTheReadmeSays() async throws {
        let run = try await run("readme-examples")
        defer { try? FileManager.default.removeItem(at: run.configHome) }
        var sections: [String: [String]] = [:]
        var current = ""
        for line in run.lines where !line.isEmpty && !line.hasPrefix("Value:") {
            if line.hasPrefix("== ") {
                current = String(line.dropFirst(3))
            } else {
                sections[current, default: []].append(line)
            }
        }
        #expect(sections["usage"] == ["0.8", "0.5", "0.6"])
        #expect(sections["optional keys"] == ["nil"])
        #expect(sections["enum example"] == ["1 Hour"])
        #expect(sections["codable example"] == ["Hello"])
        #expect(sections["use keys directly"] == ["true"])
        // `import DefaultsMacros` gives `@ObservableDefault`: the model follows the key, and
        // Observation's tracking sees the change.
        #expect(sections["observable default"] == ["false", "tracking saw a change", "true"])
        #expect(sections["reset keys"] == ["true", "false"])
        #expect(sections["control propagation"] == ["11 true"])
        #expect(sections["just UserDefaults with sugar"] == ["true", "false"])
        // Both spellings read the key's default, then what was written through the other, and
        // `Defaults.removeAll(suite: extensionDefaults)` empties the UserDefaults itself.
        #expect(sections["shared UserDefaults"] == ["true", "true", "false false true", "true true"])
        // Differs on purpose: defaults are not registered with Foundation's UserDefaults.
        #expect(sections["registered defaults"] == ["false"])
        #expect(sections["custom types"] == ["Hello", "Hello", #"Optional("Hello")"#, #"Optional("Hello")"#])
        #expect(sections["any serializable primitive"] == [#"Optional("🦄")"#])
        // The first `get()` finds the array the default holds, not a `mime`, so prints nothing.
        #expect(sections["any serializable get and set"] == ["application/octet-stream"])
        #expect(sections["any serializable in a dictionary"] == ["🦄", "application/json"])
        // Differs on purpose: the example reads Foundation's UserDefaults.standard, which this
        // package does not write (and the example itself writes nothing).
        #expect(sections["prefer raw representable"] == ["nil"])
        #expect(sections["custom collection"] == ["Hello", "World!"])
        #expect(sections["custom set algebra"] == ["true", "true"])
        #expect(run.lines.contains("== done"))
        // Everything the examples wrote went to the standard suite's file, under the program's name.
        let file = run.configHome.appendingPathComponent("readme-examples/settings.json")
        let onDisk = try String(contentsOf: file, encoding: .utf8)
        #expect(onDisk.contains(#""quality" : 0.6"#))
        #expect(onDisk.contains(#""hasUnicorn" : true"#))
        #expect(onDisk.contains(#""isUnicorn" : false"#), "written through UserDefaults.standard")
    }
}

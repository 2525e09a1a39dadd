// Runs the `defaults-test-helper` executable as a second process.
import Foundation
import Testing

/// What a run of the helper printed and how it ended.
struct HelperProcessResult {
    var status: Int32
    var output: String
    var errorOutput: String

    /// The non-empty lines of standard output.
    var lines: [String] { output.split(separator: "\n").map(String.init) }
}

/// The `defaults-test-helper` executable that `swift build --build-tests` puts next to the test binary.
enum HelperProcess {
    /// Where the helper is expected: beside the running test binary.
    static var executableURL: URL {
        URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath().deletingLastPathComponent()
            .appendingPathComponent("defaults-test-helper", isDirectory: false)
    }

    /// Runs the helper with `arguments`, waits for it to exit, and returns what it printed.
    ///
    /// `environment` entries are added to this process's environment. A helper still running after
    /// `deadline` seconds is terminated (a hang then shows as a SIGTERM status, not a stuck test).
    static func run(
        _ arguments: [String],
        environment: [String: String] = [:],
        deadline: Double = 60
    ) throws -> HelperProcessResult {
        let executable = executableURL
        try #require(
            FileManager.default.isExecutableFile(atPath: executable.path),
            "defaults-test-helper not found at \(executable.path); build with `swift build --build-tests`"
        )
        let process = Process()
        process.executableURL = executable
        process.arguments = arguments
        let output = Pipe()
        let errorOutput = Pipe()
        process.standardOutput = output
        process.standardError = errorOutput
        process.standardInput = FileHandle.nullDevice
        process.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 }
        try process.run()
        let watchdog = DispatchWorkItem { if process.isRunning { process.terminate() } }
        DispatchQueue.global().asyncAfter(deadline: .now() + deadline, execute: watchdog)
        defer { watchdog.cancel() }
        // NB: the helper prints a few short lines, far less than a pipe buffer, so reading one pipe
        // to its end before the other cannot block the helper.
        let outputData = output.fileHandleForReading.readDataToEndOfFile()
        let errorData = errorOutput.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return HelperProcessResult(
            status: process.terminationStatus,
            output: String(decoding: outputData, as: UTF8.self),
            errorOutput: String(decoding: errorData, as: UTF8.self)
        )
    }
}

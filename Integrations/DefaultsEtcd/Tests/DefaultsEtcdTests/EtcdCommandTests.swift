import Defaults
// @testable: parses credential addresses with an environment of its own
// (`EtcdSuiteAddress.init(_:environment:)`).
@testable import DefaultsEtcd
import Foundation
import Synchronization
import Testing

/// What a run of the `defaults` command printed and how it ended.
struct CommandRun: Equatable, CustomStringConvertible {
    var status: Int32
    var output: String
    var errorOutput: String

    var description: String { "exit \(status), out: \(output.debugDescription), err: \(errorOutput.debugDescription)" }
}

/// Runs this package's `defaults-etcd` with `arguments` to its end, off the pool; `environment` is
/// added to this process's.
func runDefaults(_ arguments: [String], environment: [String: String] = [:]) async throws -> CommandRun {
    try await withCheckedThrowingContinuation { continuation in
        Thread.detachNewThread {
            do {
                let process = Process()
                process.executableURL = builtProduct("defaults-etcd")
                process.arguments = arguments
                process.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 }
                let output = Pipe()
                let errorOutput = Pipe()
                process.standardOutput = output
                process.standardError = errorOutput
                process.standardInput = FileHandle.nullDevice
                try process.run()
                let errors = Mutex<Data>(Data())
                let errorsRead = DispatchSemaphore(value: 0)
                readToTheEnd(errorOutput.fileHandleForReading) { data in
                    guard let data else {
                        errorsRead.signal()
                        return
                    }
                    errors.withLock { $0.append(data) }
                }
                let printed = output.fileHandleForReading.readDataToEndOfFile()
                errorsRead.wait()
                process.waitUntilExit()
                continuation.resume(
                    returning: CommandRun(
                        status: process.terminationStatus,
                        output: String(decoding: printed, as: UTF8.self),
                        errorOutput: String(decoding: errors.withLock { $0 }, as: UTF8.self)
                    )
                )
            } catch {
                continuation.resume(throwing: error)
            }
        }
    }
}

/// The `defaults` command on a suite in etcd: the same output and exit statuses as on a file.
@Suite(.serialized) struct EtcdCommandTests {
    @Test func everyCommandPrintsAndEndsAsItDoesForAFile() async throws {
        let server = try EtcdServer()
        let etcdSuite = "etcd://127.0.0.1:\(server.clientURL.port!)/config/billing/"
        let fileSuite = server.directory.appendingPathComponent("file/settings.json").path
        let imported = server.directory.appendingPathComponent("imported.json")
        try Data(#"{"region" : "eu", "rateLimit" : 700}"#.utf8).write(to: imported)
        let invalid = server.directory.appendingPathComponent("invalid.json")
        try Data(#"{"region" : "#.utf8).write(to: invalid)
        let steps: [[String]] = [
            ["write", "<suite>", "rateLimit", "400"],
            ["write", "<suite>", "logLevel", "--string", "debug"],
            ["write", "<suite>", "limits", #"{"burst": 10, "perUser": [1, 2.5, "x"]}"#],
            ["read", "<suite>"],
            ["read", "<suite>", "limits"],
            ["read", "<suite>", "nope"],
            ["keys", "<suite>"],
            ["write", "<suite>", "rateLimit", "not json"],
            ["write", "<suite>", "", "1"],
            ["delete", "<suite>", "nope", "logLevel"],
            ["delete", "<suite>", "logLevel"],
            ["export", "<suite>"],
            ["import", "<suite>", invalid.path],
            ["import", "<suite>", imported.path],
            ["read", "<suite>"],
            ["import", "<suite>", imported.path, "--replace"],
            ["read", "<suite>"],
            ["delete", "<suite>", "--all"],
        ]
        for step in steps {
            let onFile = try await runDefaults(step.map { $0 == "<suite>" ? fileSuite : $0 })
            let onEtcd = try await runDefaults(step.map { $0 == "<suite>" ? etcdSuite : $0 })
            // NB: messages name the suite as it was typed; the rest of them is the same.
            let named = CommandRun(
                status: onEtcd.status,
                output: onEtcd.output,
                errorOutput: onEtcd.errorOutput.replacingOccurrences(of: etcdSuite, with: fileSuite)
            )
            #expect(named == onFile, "\(step)")
        }
        // What is left in etcd is what an operator reads: every setting removed. The command's
        // writes are exclusive transactions: the prefix itself names the last one (no setting).
        let left = try etcdctl(server, ["get", "--prefix", "/config/billing/"])
        #expect(left.wholeMatch(of: /\/config\/billing\/\n\{"commit":"[0-9A-F-]{36}"\}\n/) != nil, "\(left)")

        // One difference, documented in the help: a prefix without keys is a suite not found, as a
        // missing file is (a file emptied by `delete --all` still exists, and reads as {}).
        let empty = try await runDefaults(["read", etcdSuite])
        #expect(empty.status == 1)
        #expect(empty.errorOutput == "defaults: suite \(etcdSuite) holds no keys\n")
    }

    @Test func watchPrintsAnOperatorsPutDelAndTxnAndAnotherProcessesWrite() async throws {
        let server = try EtcdServer()
        let suite = "etcd://127.0.0.1:\(server.clientURL.port!)/config/billing/"
        _ = try etcdctl(server, ["put", "/config/billing/rateLimit", "400"])
        let watching = try RunningProduct("defaults-etcd", ["watch", suite])
        #expect(await watching.nextLine() == "defaults: watching \(suite); Ctrl-C stops")
        let json = try RunningProduct("defaults-etcd", ["watch", suite, "region", "--json"])
        defer {
            watching.stop()
            json.stop()
        }
        #expect(await json.nextLine() == "defaults: watching \(suite); Ctrl-C stops")

        _ = try etcdctl(server, ["put", "/config/billing/rateLimit", "500"])
        #expect(await watching.nextLine() == "rateLimit: 400 -> 500")
        #expect(try await runDefaults(["write", suite, "region", "--string", "eu"]).status == 0)
        #expect(await watching.nextLine() == #"region: (unset) -> "eu""#)
        #expect(await json.nextLine() == #"{"key":"region","new":"eu"}"#)
        _ = try etcdctl(
            endpoints: [server.clientURL],
            ["txn"],
            input: "\nput /config/billing/burst 20\ndel /config/billing/region\n\n\n"
        )
        #expect(await watching.nextLine() == "burst: (unset) -> 20")
        #expect(await watching.nextLine() == #"region: "eu" -> (unset)"#)
        #expect(await json.nextLine() == #"{"key":"region","old":"eu"}"#)
        _ = try etcdctl(server, ["del", "/config/billing/rateLimit"])
        #expect(await watching.nextLine() == "rateLimit: 500 -> (unset)")
    }

    @Test func anUnreachableEtcdOrAMistypedSuiteIsOneLineAndAStatus() async throws {
        // NB: held for the test, so no etcd another test starts can take it.
        let closed = try ReservedPort()
        let unreachable = "etcd://127.0.0.1:\(closed.port)/config/billing/"
        for step in [
            ["read", unreachable], ["keys", unreachable], ["export", unreachable], ["write", unreachable, "n", "1"],
            ["delete", unreachable, "n"], ["watch", unreachable],
        ] {
            let run = try await runDefaults(step)
            #expect(run.status == 3, "\(step): \(run)")
            #expect(run.output == "")
            #expect(run.errorOutput.hasPrefix("defaults: cannot read \(unreachable): etcd is out of reach"), "\(run)")
            #expect(run.errorOutput.split(separator: "\n").count == 1, "\(run)")
        }
        withExtendedLifetime(closed) {}
        for (suite, reason) in [
            ("etcd://127.0.0.1/config/", #""127.0.0.1" is not a member's host:port"#),
            ("etcd://127.0.0.1:2379", "no key prefix after the members"),
            ("consul://127.0.0.1:8500/config/", "this defaults knows no suites at consul://"),
        ] {
            let run = try await runDefaults(["read", suite])
            #expect(run.status == 2, "\(suite): \(run)")
            #expect(run.errorOutput.contains(reason), "\(run)")
        }
    }

    @Test func anAddressNamesItsMembersAndAPrefixEndingInASlash() throws {
        let address = try EtcdSuiteAddress("etcd://10.0.0.1:2379,10.0.0.2:2380/config/billing")
        #expect(address.endpoints.map(\.absoluteString) == ["http://10.0.0.1:2379", "http://10.0.0.2:2380"])
        #expect(address.prefix == "/config/billing/")
        #expect(address.description == "etcd://10.0.0.1:2379,10.0.0.2:2380/config/billing/")
        #expect(throws: EtcdSuiteAddress.Invalid.self) { try EtcdSuiteAddress("etcd://:2379/config/") }
        #expect(throws: EtcdSuiteAddress.Invalid.self) { try EtcdSuiteAddress("etcd://h:99999/config/") }
        #expect(throws: EtcdSuiteAddress.Invalid.self) { try EtcdSuiteAddress("etcd://h:1,/config/") }
        #expect(throws: EtcdSuiteAddress.Invalid.self) { try EtcdSuiteAddress("etcd://h:1//") }
        #expect(throws: EtcdSuiteAddress.Invalid.self) { try EtcdSuiteAddress("http://h:1/config/") }
    }

    @Test func anEtcdsAddressIsOverTLSWithTheFilesEtcdctlsFlagsName() throws {
        let address = try EtcdSuiteAddress(
            "etcds://10.0.0.1:2379/config/billing/?cacert=/etc/ca.pem&cert=/c.pem&key=/k%20e.pem"
        )
        #expect(address.endpoints.map(\.absoluteString) == ["https://10.0.0.1:2379"])
        #expect(address.prefix == "/config/billing/")
        #expect(
            address.tls
                == EtcdTLS(
                    certificateAuthority: URL(fileURLWithPath: "/etc/ca.pem"),
                    clientCertificate: URL(fileURLWithPath: "/c.pem"),
                    clientKey: URL(fileURLWithPath: "/k e.pem")
                )
        )
        #expect(try EtcdSuiteAddress("etcds://h:1/p/").tls == EtcdTLS())
        #expect(try EtcdSuiteAddress("etcds://h:1/p/?cacert=/ca.pem").description == "etcds://h:1/p/?cacert=/ca.pem")
        // Certificates with plain HTTP, a certificate without its key, a name etcdctl has not.
        #expect(throws: EtcdSuiteAddress.Invalid.self) { try EtcdSuiteAddress("etcd://h:1/p/?cacert=/ca.pem") }
        #expect(throws: EtcdSuiteAddress.Invalid.self) { try EtcdSuiteAddress("etcds://h:1/p/?cert=/c.pem") }
        #expect(throws: EtcdSuiteAddress.Invalid.self) { try EtcdSuiteAddress("etcds://h:1/p/?password=x") }
    }

    @Test func anAddressNamesSystemdCredentialsInTheCredentialsDirectory() throws {
        let environment = ["CREDENTIALS_DIRECTORY": "/run/credentials/billing.service"]
        let address = try EtcdSuiteAddress(
            "etcds://h:1/config/?cert=/etc/billing/client.pem&key-credential=etcd-key&user=billing&password-credential=etcd-password",
            environment: environment
        )
        #expect(address.passwordFile?.path == "/run/credentials/billing.service/etcd-password")
        #expect(address.tls?.clientKey?.path == "/run/credentials/billing.service/etcd-key")
        #expect(address.credentials?.user == "billing")
        // Read back, it names the files themselves.
        #expect(try EtcdSuiteAddress(address.description, environment: [:]) == address)
        // Without the directory: a clear no, naming what to do instead.
        let unset = #expect(throws: EtcdSuiteAddress.Invalid.self) {
            try EtcdSuiteAddress("etcd://h:1/p/?user=u&password-credential=etcd-password", environment: [:])
        }
        #expect(unset?.description.contains("CREDENTIALS_DIRECTORY") == true, "\(String(describing: unset))")
        #expect(unset?.description.contains("password-file=") == true)
        // A path where a name belongs; a key over plain HTTP.
        #expect(throws: EtcdSuiteAddress.Invalid.self) {
            try EtcdSuiteAddress("etcd://h:1/p/?user=u&password-credential=../etc/shadow", environment: environment)
        }
        #expect(throws: EtcdSuiteAddress.Invalid.self) {
            try EtcdSuiteAddress("etcd://h:1/p/?key-credential=k", environment: environment)
        }
    }

    @Test func anAddressNamesAUserAndItsPasswordFileNeverAPassword() throws {
        let address = try EtcdSuiteAddress("etcd://h:1/config/?user=billing&password-file=/run/credentials/a%26b")
        #expect(address.user == "billing")
        #expect(
            address.credentials
                == EtcdCredentials(user: "billing", passwordFile: URL(fileURLWithPath: "/run/credentials/a&b"))
        )
        #expect(address.tls == nil)
        // The description reads back as the same address.
        #expect(try EtcdSuiteAddress(address.description) == address)
        #expect(try EtcdSuiteAddress("etcd://h:1/config/?user=billing").credentials == nil)
        // A password file without a user; a password itself, which the message does not repeat.
        #expect(throws: EtcdSuiteAddress.Invalid.self) { try EtcdSuiteAddress("etcd://h:1/p/?password-file=/f") }
        let refusal = #expect(throws: EtcdSuiteAddress.Invalid.self) {
            try EtcdSuiteAddress("etcd://h:1/p/?user=u&password=s3cret%")
        }
        #expect(refusal?.description.contains("s3cret") == false, "\(String(describing: refusal))")
        // Nothing a credential prints shows its password.
        let credentials = EtcdCredentials(user: "u", password: "s3cret")
        var dumped = ""
        dump(credentials, to: &dumped)
        for text in [credentials.description, "\(credentials.password)", String(reflecting: credentials), dumped] {
            #expect(!text.contains("s3cret"), "\(text)")
        }
    }

    @Test func theCommandReachesATLSClusterWithTheFilesInTheAddressOrInEtcdctlsEnvironment() async throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("DefaultsEtcdTLS-\(UUID())")
        defer { try? FileManager.default.removeItem(at: folder) }
        let files = try TestCertificates(in: folder)
        let server = try EtcdServer(tls: files)
        let member = "127.0.0.1:\(server.clientURL.port!)"
        let query = "cacert=\(files.authority.path)&cert=\(files.clientCertificate.path)&key=\(files.clientKey.path)"
        let written = try await runDefaults(["write", "etcds://\(member)/config/cli/?\(query)", "rateLimit", "400"])
        #expect(written.status == 0, "\(written.errorOutput)")
        #expect(try etcdctl(server, ["get", "/config/cli/rateLimit", "--print-value-only"]) == "400\n")
        // The same files from etcdctl's own variables.
        let environment = [
            "ETCDCTL_CACERT": files.authority.path, "ETCDCTL_CERT": files.clientCertificate.path,
            "ETCDCTL_KEY": files.clientKey.path,
        ]
        let read = try await runDefaults(
            ["read", "etcds://\(member)/config/cli/", "rateLimit"],
            environment: environment
        )
        #expect(read.status == 0, "\(read.errorOutput)")
        #expect(read.output == "400\n")
        // A CA that did not sign etcd's certificate: one line saying so, and the command fails.
        let wrong = try await runDefaults(
            ["read", "etcds://\(member)/config/cli/?cacert=\(files.otherAuthority.path)", "rateLimit"],
            environment: environment
        )
        #expect(wrong.status != 0)
        #expect(wrong.errorOutput.contains("not signed by the CA trusted"), "\(wrong.errorOutput)")
    }
}

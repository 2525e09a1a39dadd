import Defaults
import Foundation

/// Checks JSON files against a JSON Schema with a real validator: Python's `jsonschema`, as
/// Draft 2020-12 (`.ci/run` installs it when missing); and with the project's own,
/// `Defaults.JSONSchema`, which must agree with it on every file, setting by setting.
package enum SchemaValidator {
    /// The validator, as a Python program: checks the schema itself, then prints one line per
    /// error, `<file>\t<key>\t<message>`, and exits 1 when any file fails.
    private static let program = """
        import json, sys, jsonschema
        schema = json.load(open(sys.argv[1]))
        jsonschema.Draft202012Validator.check_schema(schema)
        validator = jsonschema.Draft202012Validator(schema)
        failed = 0
        for path in sys.argv[2:]:
            document = json.load(open(path))
            for error in validator.iter_errors(document):
                key = error.absolute_path[0] if error.absolute_path else "(top)"
                print(path, key, error.message.replace("\\n", " "), sep="\\t")
                failed = 1
        sys.exit(failed)
        """

    /// One error the validator found.
    package struct Failure: Sendable, Equatable {
        /// The file's path.
        package let file: String
        /// The top-level member (the setting) the error is in, or `(top)`.
        package let key: String
        /// What is wrong.
        package let message: String
    }

    /// Validates `files` against the schema at `schema`; the errors found, none when all are valid.
    ///
    /// - Throws: When the validator cannot run or the schema itself is invalid; or when
    ///   `Defaults.JSONSchema` does not find the same settings at fault, or skips a keyword.
    package static func failures(of files: [URL], against schema: URL) async throws -> [Failure] {
        let result = try await RunningHelper(
            ["python3", "-c", program, schema.path] + files.map(\.path),
            executable: URL(fileURLWithPath: "/usr/bin/env")
        )
        .waitForExit()
        let failures = result.lines.map { line in
            let parts = line.split(separator: "\t", maxSplits: 2).map(String.init)
            return Failure(
                file: parts[0],
                key: parts.count > 1 ? parts[1] : "",
                message: parts.count > 2 ? parts[2] : ""
            )
        }
        guard result.status == 0 || (result.status == 1 && !failures.isEmpty) else {
            throw HelperProcessError(
                description: "the JSON Schema validator failed (\(result.status)): \(result.errorOutput)"
            )
        }
        let disagreements = try disagreements(of: files, against: schema, with: failures)
        guard disagreements.isEmpty else {
            throw HelperProcessError(
                description: disagreements.map { "\($0.file): \($0.key): \($0.message)" }.joined(separator: "\n")
            )
        }
        return failures
    }

    /// Where `Defaults.JSONSchema` does not say what Python's validator said (`failures`): each
    /// setting one refuses and the other takes, and each keyword it did not check.
    private static func disagreements(of files: [URL], against schema: URL, with failures: [Failure]) throws
        -> [Failure]
    {
        let checker = Defaults.JSONSchema(
            try Defaults.JSONValue(parsing: String(decoding: Data(contentsOf: schema), as: UTF8.self))
        )
        var found: [Failure] = []
        for file in files {
            let document = try Defaults.JSONValue(parsing: String(decoding: Data(contentsOf: file), as: UTF8.self))
            let outcome = checker.check(document)
            for unchecked in outcome.uncheckedKeywords {
                found.append(Failure(file: file.path, key: "(top)", message: "Defaults.JSONSchema: \(unchecked)"))
            }
            // The setting each violation is in: the path's first name.
            let ours = Set(
                outcome.violations.map { violation in
                    String(violation.path.prefix { $0 != "." && $0 != "[" }).nonEmpty ?? "(top)"
                }
            )
            let theirs = Set(failures.filter { $0.file == file.path }.map(\.key))
            for key in ours.symmetricDifference(theirs).sorted() {
                let said = outcome.violations.map(\.description).joined(separator: "; ")
                found.append(
                    Failure(
                        file: file.path,
                        key: key,
                        message: ours.contains(key)
                            ? "Defaults.JSONSchema refuses what jsonschema takes: \(said)"
                            : "Defaults.JSONSchema takes what jsonschema refuses"
                    )
                )
            }
        }
        return found
    }
}

extension String {
    /// The string, or `nil` when it is empty.
    fileprivate var nonEmpty: String? { isEmpty ? nil : self }
}

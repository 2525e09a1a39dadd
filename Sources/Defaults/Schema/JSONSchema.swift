import Foundation

extension Defaults {
    /// A JSON Schema document (draft 2020-12) that checks JSON values against its validation
    /// vocabulary: the checker behind the `defaults` command, the settings editors and the tests
    /// of published schemas.
    ///
    /// It checks `type`, `enum`, `const`, `minimum`, `maximum`, `exclusiveMinimum`,
    /// `exclusiveMaximum`, `multipleOf`, `minLength`, `maxLength`, `pattern`, `items`,
    /// `prefixItems`, `minItems`, `maxItems`, `uniqueItems`, `contains`, `minContains`,
    /// `maxContains`, `properties`, `required`, `additionalProperties`, `patternProperties`,
    /// `propertyNames`, `minProperties`, `maxProperties`, `dependentRequired`,
    /// `dependentSchemas`, `unevaluatedItems`, `unevaluatedProperties`, `anyOf`, `oneOf`,
    /// `allOf`, `not`, `if`/`then`/`else`, Boolean schemas, and `$ref` to any place inside the
    /// document: a JSON pointer, a `$defs` entry, a schema's `$id` or its `$anchor`. Numbers are
    /// compared by value, exactly, whatever their notation (`1.0` is `1`, `1e2` is `100`).
    ///
    /// Member names compare as Swift strings, as everywhere in a suite (see the file format's
    /// article): two names that differ only in Unicode normalisation are one member, where a
    /// validator comparing bytes sees two. The check stops, and says so, after 100,000
    /// applications of a schema and 16 more for each part of the value.
    ///
    /// Annotations (`title`, `description`, `default`, `examples`, `readOnly`, `format`, …) and
    /// `x-` extensions are read by other code and pass here. Any other keyword is not checked,
    /// and is never passed in silence: each check lists those it met in
    /// ``Outcome/uncheckedKeywords`` (a `$dynamicRef`, a reference to a document outside this one
    /// such as the metaschema, a `pattern` that is not a regular expression, a misspelt keyword),
    /// and ``uncheckedKeywords`` lists all of the document's before any check.
    ///
    /// ```swift
    /// let schema = Defaults.JSONSchema(try Defaults.JSONValue(parsing: schemaText))
    /// for violation in schema.check(value, forKey: "window")?.violations ?? [] {
    ///     print(violation)  // window.width: 5 is less than the minimum 100
    /// }
    /// ```
    public struct JSONSchema: Sendable {
        /// The schema document, as given.
        public let document: JSONValue
        /// The document's schema resources (its root and each schema with an `$id`) and anchors,
        /// by absolute URI.
        let index: SchemaIndex

        /// A schema made of `document`: an object or a Boolean (any other JSON value is a schema
        /// that is never met, and is named in every outcome's ``Outcome/uncheckedKeywords``).
        public init(_ document: JSONValue) {
            self.document = document
            index = SchemaIndex(document)
        }

        /// What checking one value found.
        public struct Outcome: Sendable, Equatable {
            /// Each rule the value breaks, in the order the schema states them; empty when it fits.
            public var violations: [Violation]
            /// The keywords met in checking that this checker does not check, each once.
            public var uncheckedKeywords: [UncheckedKeyword]
            /// Whether the value fits the schema, as far as the checked keywords say.
            public var isValid: Bool { violations.isEmpty }
        }

        /// A rule a value breaks.
        public struct Violation: Sendable, Equatable, CustomStringConvertible {
            /// Where the offending value sits inside the checked value, as a person writes it
            /// (`window.width`, `recentFiles[2]`); empty for the value itself.
            public let path: String
            /// The keyword whose rule is broken (`minimum`, `required`, `anyOf`, …); `false` for a
            /// `false` schema.
            public let keyword: String
            /// What is wrong, naming the value and the rule: `5 is less than the minimum 100`.
            public let message: String

            /// Makes a violation.
            public init(path: String, keyword: String, message: String) {
                self.path = path
                self.keyword = keyword
                self.message = message
            }

            /// `path: message`, or the message alone for the checked value itself.
            public var description: String { path.isEmpty ? message : "\(path): \(message)" }
        }

        /// A keyword the checker met and did not check.
        public struct UncheckedKeyword: Sendable, Equatable, CustomStringConvertible {
            /// The keyword, as the schema spells it.
            public let keyword: String
            /// Where it is in the schema document, as a JSON pointer (`/properties/window`).
            public let location: String
            /// Why it was not checked.
            public let reason: String

            /// Makes the record of an unchecked keyword.
            public init(keyword: String, location: String, reason: String) {
                self.keyword = keyword
                self.location = location
                self.reason = reason
            }

            /// `"keyword" at location is not checked: reason`.
            /// (Names in it with a control character are escaped, so the line is one line.)
            public var description: String {
                let place = location.isEmpty ? "the schema's root" : escapingControls(location)
                return
                    "\(quoted(.string(keyword), whole: true)) at \(place) is not checked: \(escapingControls(reason))"
            }
        }

        /// Checks `value` against the whole document.
        public func check(_ value: JSONValue) -> Outcome {
            let node = index.root
            return onEnoughStack(for: value) { [index] in
                var checker = SchemaChecker(index: index, checking: value)
                let result = checker.evaluate(node, value, path: SchemaPath())
                return Outcome(violations: result.violations, uncheckedKeywords: checker.unchecked)
            }
        }

        /// Checks `value` as the setting `name` of a settings schema: against the document's
        /// `properties[name]` (references inside it resolve within the whole document), its
        /// violations' paths starting with `name`.
        ///
        /// - Returns: `nil` when the document does not describe `name`.
        public func check(_ value: JSONValue, forKey name: String) -> Outcome? {
            guard let node = index.root.child("properties")?.child(name) else { return nil }
            return onEnoughStack(for: value) { [index] in
                var checker = SchemaChecker(index: index, checking: value)
                let result = checker.evaluate(node, value, path: SchemaPath().member(name, top: true))
                return Outcome(violations: result.violations, uncheckedKeywords: checker.unchecked)
            }
        }

        /// Runs `check` where the stack holds it: here for a value nested a few levels against a
        /// schema without references; else on a thread of its own with a 64 MiB stack, waited
        /// for. (A check recurses once or more per level of the value and per reference: 435
        /// levels of a recursive schema overflowed a main thread's 8 MiB in a debug build, and a
        /// task's thread has far less.)
        private func onEnoughStack(for value: JSONValue, _ check: @escaping @Sendable () -> Outcome) -> Outcome {
            guard index.hasReferences || Self.depth(of: value, deeperThan: 16) else { return check() }
            final class Answer: @unchecked Sendable {  // the semaphore orders the one write before the one read
                var outcome: Outcome?
                let done = DispatchSemaphore(value: 0)
            }
            let answer = Answer()
            let thread = Thread {
                answer.outcome = check()
                answer.done.signal()
            }
            thread.stackSize = 64 << 20
            thread.start()
            answer.done.wait()
            return answer.outcome!
        }

        /// Whether `value` nests more than `limit` levels.
        private static func depth(of value: JSONValue, deeperThan limit: Int) -> Bool {
            guard limit >= 0 else { return true }
            switch value {
            case .array(let elements): return elements.contains { depth(of: $0, deeperThan: limit - 1) }
            case .object(let members): return members.values.contains { depth(of: $0, deeperThan: limit - 1) }
            default: return false
            }
        }

        /// What in the document no check could apply, found by reading it through: keywords this
        /// checker does not know, references to other documents or to nowhere, patterns that are
        /// not regular expressions. (A check names those it meets in its
        /// ``Outcome/uncheckedKeywords``; this names them all, before any value is checked.)
        public var uncheckedKeywords: [UncheckedKeyword] {
            var checker = SchemaChecker(index: index, checking: .null)
            for node in index.nodes { checker.survey(node) }
            return checker.unchecked
        }

        /// Whether the document describes the setting `name` (has `properties[name]`).
        public func describes(key name: String) -> Bool {
            index.root.child("properties")?.child(name) != nil
        }
    }
}

/// `text` with each control character written as JSON writes it (`\n`, `\u001b`).
func escapingControls(_ text: String) -> String {
    guard text.unicodeScalars.contains(where: { $0.properties.generalCategory == .control }) else { return text }
    let quotedText = quoted(.string(text), whole: true)
    return String(quotedText.dropFirst().dropLast())
}

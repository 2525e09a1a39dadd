// @testable: builds a document at the parser's depth limit (`JSONParser.maximumDepth`).
@testable import Defaults
import Foundation
import Testing

@Suite struct SerializationFileFormatTests {
    @Test func theFileIsPrettyPrintedWithSortedKeys() throws {
        try withSerializationFile { file in
            let suite = file.makeSuite()
            suite[Defaults.Key<Int>("b", default: 0, suite: suite)] = 2
            suite[Defaults.Key<[String: Int]>("a", default: [:], suite: suite)] = ["z": 1, "y": 2]
            suite[Defaults.Key<[Int]>("C", default: [], suite: suite)] = [1, 2]
            suite[Defaults.Key<[Int]>("empty", default: [1], suite: suite)] = []
            suite[Defaults.Key<String>("ünï", default: "", suite: suite)] = "ç\"\n"
            suite[Defaults.Key<Double?>("gone", suite: suite)] = nil
            try suite.synchronize()

            let expected = """
                {
                  "C" : [
                    1,
                    2
                  ],
                  "a" : {
                    "y" : 2,
                    "z" : 1
                  },
                  "b" : 2,
                  "empty" : [],
                  "ünï" : "ç\\"\\n"
                }

                """
            #expect(try file.text() == expected)
        }
    }

    @Test func theSameValuesAlwaysWriteTheSameBytes() throws {
        let values = Dictionary(uniqueKeysWithValues: (0..<200).map { ("key \($0)", Set(0..<($0 % 7))) })
        var files: [[UInt8]] = []
        for order in [Array(values.keys), values.keys.sorted(), values.keys.sorted().reversed()] {
            try withSerializationFile { file in
                let suite = file.makeSuite()
                for name in order {
                    suite[Defaults.Key<Set<Int>>(name, default: [], suite: suite)] = values[name]!
                }
                try suite.synchronize()
                files.append(try file.bytes())
            }
        }
        #expect(files.count == 3)
        #expect(Set(files).count == 1)
    }

    @Test func aValueNestedTooDeeplyToReadBackDoesNotCostTheRestOfTheFile() throws {
        var deep: Defaults.AnySerializable = 1
        for _ in 0..<JSONParser.maximumDepth {
            deep = [deep]
        }
        try withSerializationFile { file in
            let writer = file.makeSuite()
            writer[Defaults.Key<String>("keep", default: "", suite: writer)] = "precious"
            try writer.synchronize()
            writer[Defaults.Key<Defaults.AnySerializable>("deep", default: nil, suite: writer)] = deep
            try? writer.synchronize()

            let reader = try file.makeReader()
            #expect(reader[Defaults.Key<String>("keep", default: "", suite: reader)] == "precious")
            let corrupt = file.errors.errors.filter { error in
                if case .corruptFile = error { return true }
                return false
            }
            #expect(corrupt.isEmpty, "\(corrupt)")
            // The refusal names the rule, not only the type (a black-box probe found it said
            // "cannot serialize a value of type AnySerializable" and nothing more).
            let refusals = file.errors.errors.filter { error in
                if case .serializationFailed(key: "deep", _) = error { return true }
                return false
            }
            #expect(refusals.count == 1, "\(file.errors.errors)")
            #expect(refusals.first?.description.contains("nested more than 511 levels deep") == true, "\(refusals)")
        }
    }
}

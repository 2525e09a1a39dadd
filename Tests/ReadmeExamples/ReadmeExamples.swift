// Runs each example in the README's order, under a heading the test looks for.
import Foundation

@main
struct ReadmeExamples {
    static func main() {
        let sections: [(String, () -> Void)] = [
            ("usage", usage),
            ("optional keys", optionalKeys),
            ("enum example", enumExample),
            ("codable example", codableExample),
            ("use keys directly", useKeysDirectly),
            ("observable default", observableDefault),
            ("reset keys", resetKeys),
            ("control propagation", controlPropagation),
            ("just UserDefaults with sugar", justUserDefaultsWithSugar),
            ("shared UserDefaults", sharedUserDefaults),
            ("registered defaults", registeredDefaults),
            ("custom types", customTypes),
            ("any serializable primitive", anySerializablePrimitive),
            ("any serializable get and set", anySerializableGetAndSet),
            ("any serializable in a dictionary", anySerializableInADictionary),
            ("prefer raw representable", preferRawRepresentable),
            ("custom collection", customCollection),
            ("custom set algebra", customSetAlgebra),
            ("observe changes to a key", observeChangesToAKey),
        ]
        for (name, run) in sections {
            print("== \(name)")
            run()
        }
        print("== done")
    }
}

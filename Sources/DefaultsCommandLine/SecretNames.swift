import Defaults

/// The names under which a suite's stored values would give a secret key's value, as its program
/// reads them: each secret's own name, `"database.password"`, and each nesting of it in objects,
/// `{"database": {"password": …}}` (which the swift-configuration provider takes for the secret).
///
/// The command never shows what is stored at one of these names, and never writes a value there.
struct SecretNames {
    /// The secret keys' names.
    let names: Set<String>
    /// Each part of a secret's name before one of its dots (`database` for `database.password`):
    /// the names under which an object may nest the rest.
    private let parents: Set<String>

    init(_ names: Set<String>) {
        self.names = names
        var parents = Set<String>()
        for name in names {
            for index in name.indices where name[index] == "." { parents.insert(String(name[..<index])) }
        }
        self.parents = parents
    }

    /// Whether `name` is a secret key's own name.
    func contains(_ name: String) -> Bool { names.contains(name) }

    /// `value`, stored under `name`, with what it holds at a secret's name shown as `replacement`,
    /// or left out when `replacement` is `nil`.
    func masking(_ value: JSONValue, storedUnder name: String, with replacement: JSONValue?) -> JSONValue? {
        if names.contains(name) { return replacement }
        guard parents.contains(name), case .object(let members) = value else { return value }
        var masked: [String: JSONValue] = [:]
        for (member, inner) in members {
            masked[member] = masking(inner, storedUnder: name + "." + member, with: replacement)
        }
        return .object(masked)
    }

    /// `values`, by name, with what each holds at a secret's name shown as `replacement`, or left
    /// out when `replacement` is `nil`.
    func masking(_ values: [String: JSONValue], with replacement: JSONValue?) -> [String: JSONValue] {
        guard !names.isEmpty else { return values }
        var masked: [String: JSONValue] = [:]
        for (name, value) in values { masked[name] = masking(value, storedUnder: name, with: replacement) }
        return masked
    }

    /// The secret whose name `value`, stored under `name`, holds a value at (the first by name);
    /// `nil` when it holds none.
    func secret(setBy value: JSONValue, storedUnder name: String) -> String? {
        if names.contains(name) { return name }
        guard parents.contains(name), case .object(let members) = value else { return nil }
        for member in members.keys.sorted(by: utf8Precedes) {
            if let secret = secret(setBy: members[member]!, storedUnder: name + "." + member) { return secret }
        }
        return nil
    }

    /// Why a write of `value` under `name` is refused, naming no value; `nil` when it sets no
    /// secret.
    func refusal(ofWriting value: JSONValue, under name: String) -> String? {
        guard let secret = secret(setBy: value, storedUnder: name) else { return nil }
        let refusal = SuiteSchema.secretRefusal(secret)
        return secret == name ? refusal : refusal + ", nested in \"\(name)\" or not"
    }

    /// `value`, about to be stored under `name`, with what `stored` (the value there now) holds at
    /// each secret's name nested in it put back: a write that never showed it neither sets nor drops it.
    func keepingSecrets(of stored: JSONValue?, in value: JSONValue, under name: String) -> JSONValue {
        guard parents.contains(name), case .object(var members) = value, case .object(let kept)? = stored else {
            return value
        }
        for (member, storedInner) in kept {
            let path = name + "." + member
            if names.contains(path) {
                members[member] = storedInner
            } else if let inner = members[member] {
                members[member] = keepingSecrets(of: storedInner, in: inner, under: path)
            }
        }
        return .object(members)
    }
}

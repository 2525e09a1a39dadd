/// Which of two schemas of one suite a publish keeps, where several versions of a program share a
/// backend that keeps one (see ``Defaults/Suite/publishSchema(for:migrations:version:)``).
///
/// Newer replaces older, and nothing else: so instances of two versions started in turn during a
/// rolling upgrade do not take the schema back and forth.
enum SchemaPrecedence: Equatable {
    /// The two are the same: nothing to publish.
    case same
    /// This program's is newer: it replaces the kept one.
    case replace
    /// The kept one is newer: it stays.
    case keep
    /// Nothing says which is newer: the kept one stays, for the reason given.
    case undecided(String)

    /// Decides between `ours`, the schema this program would publish, and `kept`, the one the
    /// backend keeps (`nil`: none).
    ///
    /// Newer is: listing every migration the other lists, in order, and more (a program learns
    /// migrations and never forgets one); with the same migrations, a higher `x-program-version`,
    /// or one where the other has none.
    init(ours: Defaults.JSONValue, kept: Defaults.JSONValue?) {
        guard let kept, case .object(let keptMembers) = kept, case .object(let ourMembers) = ours else {
            self = .replace
            return
        }
        guard kept != ours else {
            self = .same
            return
        }
        let keptMigrations = Self.migrationIDs(keptMembers)
        let ourMigrations = Self.migrationIDs(ourMembers)
        if keptMigrations != ourMigrations {
            if ourMigrations.starts(with: keptMigrations) {
                self = .replace
                return
            }
            if keptMigrations.starts(with: ourMigrations) {
                self = .keep
                return
            }
        }
        let keptVersion = Self.version(keptMembers)
        let ourVersion = Self.version(ourMembers)
        switch (ourVersion, keptVersion) {
        case (let ours?, let kept?):
            let order = Self.order(ours, kept)
            if order != 0 {
                self = order > 0 ? .replace : .keep
                return
            }
            self = .undecided(
                "a program of the same version (\(ours)) published a different schema"
                    + (keptMigrations == ourMigrations ? " with the same migrations" : " with other migrations")
                    + "; one of them was given the wrong version"
            )
        case (.some, nil):
            self = .replace
        case (nil, .some):
            self = .keep
        case (nil, nil):
            self = .undecided(
                "another version of the program published a different schema"
                    + (keptMigrations == ourMigrations ? " with the same migrations" : " with other migrations")
                    + ", and neither gives a version to say which is newer (publishSchema's version:)"
            )
        }
    }

    /// The ids of the migrations a schema lists, in order.
    private static func migrationIDs(_ members: [String: Defaults.JSONValue]) -> [String] {
        guard case .array(let entries)? = members["x-migrations"] else { return [] }
        return entries.compactMap { entry in
            guard case .object(let fields) = entry, case .string(let id)? = fields["id"] else { return nil }
            return id
        }
    }

    private static func version(_ members: [String: Defaults.JSONValue]) -> String? {
        guard case .string(let version)? = members["x-program-version"], !version.isEmpty else { return nil }
        return version
    }

    /// How version `a` compares with `b`: part by part (runs of digits, runs of letters),
    /// numbers as numbers and words as text, a version with more parts higher when the others
    /// are equal (`2.0-rc10` after `2.0-rc2`); negative, zero or positive.
    static func order(_ a: String, _ b: String) -> Int {
        func parts(_ text: String) -> [String] {
            var parts: [String] = []
            var current = ""
            for character in text {
                guard character.isLetter || character.isNumber else {
                    if !current.isEmpty { parts.append(current) }
                    current = ""
                    continue
                }
                if let last = current.last, last.isNumber != character.isNumber {
                    parts.append(current)
                    current = ""
                }
                current.append(character)
            }
            if !current.isEmpty { parts.append(current) }
            return parts
        }
        let left = parts(a)
        let right = parts(b)
        for (x, y) in zip(left, right) where x != y {
            if let m = Int(x), let n = Int(y) { return m < n ? -1 : 1 }
            return x < y ? -1 : 1
        }
        return left.count == right.count ? 0 : left.count < right.count ? -1 : 1
    }
}

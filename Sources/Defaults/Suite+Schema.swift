import Foundation

extension Defaults.Suite {
    /// Where ``publishSchema(for:migrations:)`` writes this suite's schema: beside its
    /// file, with `.schema.json` for the file's extension (`settings.schema.json` beside
    /// `settings.json`); `nil` for a suite that is not a file.
    public var schemaFileURL: URL? { fileURL.map(Self.schemaFileURL(forSettingsFile:)) }

    /// Where the schema of the settings file `file` is published: `settings.schema.json` beside
    /// `settings.json`.
    public static func schemaFileURL(forSettingsFile file: URL) -> URL {
        let name = file.deletingPathExtension().lastPathComponent
        return file.deletingLastPathComponent().appendingPathComponent(name + ".schema.json")
    }

    /// The JSON Schema (draft 2020-12) document that describes `keys` as this suite's file stores them.
    ///
    /// Each key is a property with the schema of its stored form, its summary as `description`,
    /// its fixed default as `default`, its range as `minimum` and `maximum`, and its Swift type as
    /// `x-swift-type`, and its migration (`x-formerly`, `x-migration`, `x-converts-from`). Keys
    /// the document does not list are allowed, as the file keeps them. The suite's own
    /// `migrations` are listed in order under `x-migrations`, by id (and, for a retirement, the
    /// names it removes), so `defaults describe` and `defaults migrate` can show them.
    ///
    /// - Parameters:
    ///   - keys: The keys to describe.
    ///   - migrations: The suite's own migrations, oldest first, as given to ``migrate(_:dryRun:)``.
    /// - Returns: The schema document.
    public func schema(for keys: [Defaults.Keys], migrations: [Defaults.Migration] = []) -> Defaults.JSONValue {
        var properties: [String: JSONValue] = [
            "$schema": .object([
                "type": .string("string"),
                "description": .string("The schema this file follows, for editors; not a setting."),
            ])
        ]
        for key in keys { properties[key.name] = .object(key.schema()) }
        var document: [String: JSONValue] = [
            "$schema": .string("https://json-schema.org/draft/2020-12/schema"),
            "title": .string(fileURL.map { "The settings in \($0.path)" } ?? "Settings"),
            "type": .string("object"),
            "properties": .object(properties),
        ]
        if !migrations.isEmpty {
            document["x-migrations"] = .array(
                migrations.map { migration in
                    var entry: [String: JSONValue] = ["id": .string(migration.id)]
                    if let removes = migration.removes { entry["removes"] = .array(removes.map { .string($0) }) }
                    return .object(entry)
                }
            )
        }
        return .object(document)
    }

    /// Publishes the schema of `keys` at ``schemaFileURL``, for editors and the `defaults` command.
    ///
    /// Call it once at launch with the keys the program reads; Swift creates static keys lazily, so
    /// the library cannot find them alone. The file is replaced atomically, and only when its
    /// contents change: publishing the same keys again writes nothing. Afterwards a value of one of
    /// these keys that does not decode as its type is reported once through the error handler
    /// (``Defaults/StorageError/valueDoesNotFitSchema(key:expectedType:value:)``). A suite that is not
    /// a file writes nothing, and still reports such values.
    ///
    /// ```swift
    /// try Defaults.Suite.standard.publishSchema(for: [.fontSize, .theme, .recentFiles])
    /// ```
    ///
    /// - Parameters:
    ///   - keys: The keys the program reads.
    ///   - migrations: The suite's own migrations, oldest first, as given to ``migrate(_:dryRun:)``.
    /// - Returns: Whether the file was written.
    /// - Throws: ``Defaults/StorageError/writeFailed(url:reason:)`` when it cannot be written.
    @discardableResult
    public func publishSchema(
        for keys: [Defaults.Keys],
        migrations: [Defaults.Migration] = []
    ) throws(Defaults.StorageError) -> Bool {
        let document = schema(for: keys, migrations: migrations)
        var typeNames: [String: String] = [:]
        if case .object(let members) = document, case .object(let properties)? = members["properties"] {
            for (name, property) in properties {
                guard case .object(let property) = property, case .string(let type)? = property["x-swift-type"] else {
                    continue
                }
                typeNames[name] = type
            }
        }
        store.describe(typeNames)
        guard let url = schemaFileURL else { return false }
        let bytes = JSONWriter.prettyBytes(document)
        if let existing = try? FileStorage.contents(atPath: url.path, directoryIsMissing: false), existing == bytes {
            return false
        }
        do {
            try createDirectory(url.deletingLastPathComponent().path)
            try Data(bytes).write(to: url, options: .atomic)
        } catch {
            throw .writeFailed(url: url, reason: "\(error)")
        }
        return true
    }

    /// Publishes the schema of `keys` at ``schemaFileURL``; see ``publishSchema(for:migrations:)``.
    ///
    /// - Returns: Whether the file was written.
    /// - Throws: ``Defaults/StorageError/writeFailed(url:reason:)`` when it cannot be written.
    @discardableResult
    public func publishSchema(for keys: Defaults.Keys...) throws(Defaults.StorageError) -> Bool {
        try publishSchema(for: keys)
    }
}

import Foundation

extension Defaults.Suite {
    /// Where ``publishSchema(for:migrations:version:)`` writes this suite's schema: beside its
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
    /// A `version` is kept as `x-program-version`: where several versions of a program share a
    /// suite kept by a backend, it says whose schema is newer (see
    /// ``publishSchema(for:migrations:version:)``).
    ///
    /// - Parameters:
    ///   - keys: The keys to describe.
    ///   - migrations: The suite's own migrations, oldest first, as given to ``migrate(_:dryRun:)``.
    ///   - version: The program's version (`"2.4.1"`), if it gives one.
    /// - Returns: The schema document.
    public func schema(
        for keys: [Defaults.Keys],
        migrations: [Defaults.Migration] = [],
        version: String? = nil
    ) -> Defaults.JSONValue {
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
        if let version { document["x-program-version"] = .string(version) }
        return .object(document)
    }

    /// Publishes the schema of `keys`, for editors and the `defaults` command: at
    /// ``schemaFileURL`` for a suite kept in a file, or in the backend for one that keeps it
    /// (``Defaults/Backend/keepsSchema``: etcd's, under a name it reserves).
    ///
    /// Call it once at launch with the keys the program reads; Swift creates static keys lazily, so
    /// the library cannot find them alone. The file is replaced atomically, and only when its
    /// contents change: publishing the same keys again writes nothing. Afterwards a value of one of
    /// these keys that does not decode as its type is reported once through the error handler
    /// (``Defaults/StorageError/valueDoesNotFitSchema(key:expectedType:value:)``). A suite kept
    /// neither in a file nor by a backend that keeps a schema writes nothing, and still reports
    /// such values.
    ///
    /// Where several versions of a program share a backend's suite (a rolling upgrade), each
    /// publishes its own schema, and the one kept does not flap between them: a schema replaces
    /// the one kept only when it is newer, that is, when it lists every migration the kept one
    /// lists and more; or, with the same migrations, when its `version` is higher (compared part
    /// by part, numbers as numbers: `1.10` is higher than `1.9`), or it gives a version and the
    /// kept one none. An older program leaves the newer schema in place. When neither says which
    /// is newer, the kept schema stays and
    /// ``Defaults/StorageError/schemaNotPublished(backend:reason:)`` is reported.
    ///
    /// ```swift
    /// try Defaults.Suite.standard.publishSchema(for: [.fontSize, .theme, .recentFiles])
    /// ```
    ///
    /// - Parameters:
    ///   - keys: The keys the program reads.
    ///   - migrations: The suite's own migrations, oldest first, as given to ``migrate(_:dryRun:)``.
    ///   - version: The program's version, which says whose schema is newer in a shared backend.
    /// - Returns: Whether this call wrote the schema.
    /// - Throws: ``Defaults/StorageError/writeFailed(url:reason:)`` when the file cannot be
    ///   written; what the backend throws when it cannot keep the schema (for etcd,
    ///   ``Defaults/StorageError/writeRefused(backend:reason:)`` for a role that may only read).
    @discardableResult
    public func publishSchema(
        for keys: [Defaults.Keys],
        migrations: [Defaults.Migration] = [],
        version: String? = nil
    ) throws(Defaults.StorageError) -> Bool {
        let document = schema(for: keys, migrations: migrations, version: version)
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
        if case .backend(let connection) = store.backend, connection.backend.keepsSchema {
            return try publish(document, to: connection.backend)
        }
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

    /// Keeps `document` as `backend`'s schema when it is newer than the one kept (see
    /// ``SchemaPrecedence``); tried again when another publisher changed it meanwhile.
    private func publish(
        _ document: Defaults.JSONValue,
        to backend: any Defaults.Backend
    ) throws(Defaults.StorageError) -> Bool {
        for _ in 0..<8 {
            let kept = try backend.loadSchema()
            switch SchemaPrecedence(ours: document, kept: kept) {
            case .same, .keep:
                return false
            case .undecided(let reason):
                store.reportInBackground(.schemaNotPublished(backend: backend.name, reason: reason))
                return false
            case .replace:
                if try backend.storeSchema(document, ifUnchanged: kept) { return true }
            }
        }
        throw .backendFailed(
            backend: backend.name,
            reason: "its schema changed 8 times while this program published its own; it was not published"
        )
    }

    /// The schema published for this suite: the file at ``schemaFileURL``, or the one its
    /// backend keeps (``Defaults/Backend/keepsSchema``); `nil` when there is none.
    ///
    /// - Throws: ``Defaults/StorageError/unreadableFile(url:reason:)`` when the schema file is
    ///   there but cannot be read or is not JSON; what the backend throws when it cannot tell.
    public func publishedSchema() throws(Defaults.StorageError) -> Defaults.JSONValue? {
        if let url = schemaFileURL {
            let bytes: [UInt8]
            do throws(SystemError) {
                guard let read = try FileStorage.contents(atPath: url.path, directoryIsMissing: true) else {
                    return nil
                }
                bytes = read
            } catch {
                throw .unreadableFile(url: url, reason: error.description)
            }
            do {
                return try Defaults.JSONValue(parsing: bytes)
            } catch {
                throw .unreadableFile(url: url, reason: "not JSON: \(error)")
            }
        }
        if case .backend(let connection) = store.backend { return try connection.backend.loadSchema() }
        return nil
    }

    /// Publishes the schema of `keys`; see ``publishSchema(for:migrations:version:)``.
    ///
    /// - Returns: Whether the file was written.
    /// - Throws: ``Defaults/StorageError/writeFailed(url:reason:)`` when it cannot be written.
    @discardableResult
    public func publishSchema(for keys: Defaults.Keys...) throws(Defaults.StorageError) -> Bool {
        try publishSchema(for: keys)
    }
}

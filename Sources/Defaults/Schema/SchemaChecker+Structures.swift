extension SchemaChecker {
    // MARK: - Arrays

    mutating func applyArray(
        _ keyword: String,
        _ argument: JSONValue,
        of node: SchemaNode,
        _ members: [String: JSONValue],
        to value: JSONValue,
        path: SchemaPath,
        into result: inout SchemaResult
    ) {
        guard case .array(let elements) = value else { return }
        switch keyword {
        case "prefixItems":
            guard case .array(let prefix) = argument else { return note(keyword, at: node, "it is not an array") }
            for position in 0..<min(prefix.count, elements.count) {
                guard let schema = sub(node, keyword, String(position)) else { continue }
                result.violations += evaluate(schema, elements[position], path: path.element(position)).violations
                result.evaluatedElements.insert(position)
            }
        case "items":
            guard let schema = sub(node, keyword) else { return }
            var start = 0
            if case .array(let prefix)? = members["prefixItems"] { start = min(prefix.count, elements.count) }
            for position in start..<elements.count {
                let inner = evaluate(schema, elements[position], path: path.element(position))
                result.violations += inner.violations.map { reworded($0, element: position) }
                result.evaluatedElements.insert(position)
            }
        case "contains":
            applyContains(of: node, members, to: elements, path: path, into: &result)
        case "minItems", "maxItems":
            guard let limit = count(argument) else { return note(keyword, at: node, "it is not a count") }
            let items = elements.count == 1 ? "1 element" : "\(elements.count) elements"
            if keyword == "minItems", elements.count < limit {
                result.fail(path, keyword, "has \(items), fewer than the minimum \(limit) (minItems)")
            } else if keyword == "maxItems", elements.count > limit {
                result.fail(path, keyword, "has \(items), more than the maximum \(limit) (maxItems)")
            }
        default:  // uniqueItems
            guard case .bool(let unique) = argument else { return note(keyword, at: node, "it is not a Boolean") }
            guard unique else { return }
            // By each element's canonical text, so a long array costs one pass, not a pass per element.
            var seen: [String: Int] = [:]
            for later in elements.indices {
                if let earlier = seen.updateValue(later, forKey: canonicalJSON(elements[later])) {
                    return result.fail(
                        path,
                        keyword,
                        "elements [\(earlier)] and [\(later)] are both \(quoted(elements[later])); uniqueItems forbids repeats"
                    )
                }
            }
        }
    }

    /// `items: false` refusing an element, said as the keyword that applied it.
    private func reworded(_ violation: Defaults.JSONSchema.Violation, element: Int) -> Defaults.JSONSchema.Violation {
        guard violation.keyword == "false" else { return violation }
        return .init(
            path: violation.path,
            keyword: "items",
            message: "no element is allowed past the ones prefixItems describes"
        )
    }

    private mutating func applyContains(
        of node: SchemaNode,
        _ members: [String: JSONValue],
        to elements: [JSONValue],
        path: SchemaPath,
        into result: inout SchemaResult
    ) {
        guard let schema = sub(node, "contains") else { return }
        var least = 1
        if let argument = members["minContains"] {
            guard let limit = count(argument) else { return note("minContains", at: node, "it is not a count") }
            least = limit
        }
        var most: Int?
        if let argument = members["maxContains"] {
            guard let limit = count(argument) else { return note("maxContains", at: node, "it is not a count") }
            most = limit
        }
        var fitting: [Int] = []
        for (position, element) in elements.enumerated()
        where evaluate(schema, element, path: path.element(position)).isValid {
            fitting.append(position)
        }
        result.evaluatedElements.formUnion(fitting)
        let fit = fitting.count == 1 ? "1 element fits" : "\(fitting.count) elements fit"
        if fitting.count < least {
            let message =
                least == 1 && members["minContains"] == nil
                ? "no element fits the schema under contains"
                : "\(fit) the schema under contains, fewer than minContains \(least)"
            result.fail(path, least == 1 && members["minContains"] == nil ? "contains" : "minContains", message)
        }
        if let most, fitting.count > most {
            result.fail(path, "maxContains", "\(fit) the schema under contains, more than maxContains \(most)")
        }
    }

    // MARK: - Objects

    mutating func applyObject(
        _ keyword: String,
        _ argument: JSONValue,
        of node: SchemaNode,
        _ members: [String: JSONValue],
        to value: JSONValue,
        path: SchemaPath,
        into result: inout SchemaResult
    ) {
        guard case .object(let object) = value else { return }
        switch keyword {
        case "required":
            guard case .array(let names) = argument else { return note(keyword, at: node, "it is not an array") }
            for case .string(let name) in names where object[name] == nil {
                result.fail(path, keyword, "lacks the member \(quoted(.string(name))), which is required")
            }
        case "properties":
            guard case .object(let described) = argument else { return note(keyword, at: node, "it is not an object") }
            for name in described.keys.sorted() {
                guard let member = object[name], let schema = sub(node, keyword, name) else { continue }
                result.violations += evaluate(schema, member, path: path.member(name)).violations
                result.evaluatedMembers.insert(name)
            }
        case "patternProperties":
            guard case .object(let patterns) = argument else { return note(keyword, at: node, "it is not an object") }
            for pattern in patterns.keys.sorted() {
                guard let schema = sub(node, keyword, pattern) else { continue }
                for name in object.keys.sorted() {
                    if matches(name, pattern, at: node, keyword) == true {
                        result.violations += evaluate(schema, object[name]!, path: path.member(name)).violations
                        result.evaluatedMembers.insert(name)
                    }
                }
            }
        case "additionalProperties":
            guard let schema = sub(node, keyword) else { return }
            var described: [String: JSONValue] = [:]
            if case .object(let properties)? = members["properties"] { described = properties }
            var patterns: [String] = []
            if case .object(let entries)? = members["patternProperties"] { patterns = Array(entries.keys) }
            for name in object.keys.sorted() where described[name] == nil {
                if patterns.contains(where: { matches(name, $0, at: node, "patternProperties") == true }) { continue }
                let inner = evaluate(schema, object[name]!, path: path.member(name))
                result.violations += inner.violations.map { reworded($0, keyword, name) }
                result.evaluatedMembers.insert(name)
            }
        case "propertyNames":
            guard let schema = sub(node, keyword) else { return }
            for name in object.keys.sorted() {
                let inner = evaluate(schema, .string(name), path: SchemaPath())
                guard !inner.isValid else { continue }
                let reasons = inner.violations.map(\.message).joined(separator: "; ")
                result.fail(path.member(name), keyword, "the name is not allowed (propertyNames): \(reasons)")
            }
        case "minProperties", "maxProperties":
            guard let limit = count(argument) else { return note(keyword, at: node, "it is not a count") }
            let count = object.count == 1 ? "1 member" : "\(object.count) members"
            if keyword == "minProperties", object.count < limit {
                result.fail(path, keyword, "has \(count), fewer than the minimum \(limit) (minProperties)")
            } else if keyword == "maxProperties", object.count > limit {
                result.fail(path, keyword, "has \(count), more than the maximum \(limit) (maxProperties)")
            }
        case "dependentRequired":
            guard case .object(let dependencies) = argument else {
                return note(keyword, at: node, "it is not an object")
            }
            for (name, needed) in dependencies.sorted(by: { $0.key < $1.key }) where object[name] != nil {
                guard case .array(let needed) = needed else { continue }
                for case .string(let other) in needed where object[other] == nil {
                    result.fail(
                        path,
                        keyword,
                        "has \(quoted(.string(name))), so it must have \(quoted(.string(other))) too"
                    )
                }
            }
        case "dependentSchemas":
            guard case .object(let dependencies) = argument else {
                return note(keyword, at: node, "it is not an object")
            }
            for name in dependencies.keys.sorted() where object[name] != nil {
                guard let schema = sub(node, keyword, name) else { continue }
                result.absorb(evaluate(schema, value, path: path))
            }
        default:
            return
        }
    }

    // MARK: - Combinations

    mutating func applyCombination(
        _ keyword: String,
        _ argument: JSONValue,
        of node: SchemaNode,
        _ members: [String: JSONValue],
        to value: JSONValue,
        path: SchemaPath,
        into result: inout SchemaResult
    ) {
        switch keyword {
        case "not":
            guard let schema = sub(node, keyword) else { return }
            if evaluate(schema, value, path: path).isValid {
                result.fail(path, keyword, "\(quoted(value)) fits the schema under not, which it must not")
            }
        case "if":
            guard let condition = sub(node, keyword) else { return }
            let test = evaluate(condition, value, path: path)
            result.absorbEvaluated(test)
            if let branch = sub(node, test.isValid ? "then" : "else") {
                result.absorb(evaluate(branch, value, path: path))
            }
        default:
            guard case .array(let schemas) = argument, !schemas.isEmpty else {
                return note(keyword, at: node, "it is not a non-empty array")
            }
            var outcomes: [SchemaResult] = []
            for position in schemas.indices {
                guard let schema = sub(node, keyword, String(position)) else { continue }
                outcomes.append(evaluate(schema, value, path: path))
            }
            let fitting = outcomes.indices.filter { outcomes[$0].isValid }
            switch keyword {
            case "allOf":
                for outcome in outcomes { result.absorb(outcome) }
            case "anyOf" where fitting.isEmpty, "oneOf" where fitting.isEmpty:
                if let types = typesOnly(outcomes, of: node, keyword, path: path) {
                    return result.fail(path, keyword, "must be \(types), not \(quoted(value))")
                }
                let reasons = outcomes.enumerated()
                    .map { position, outcome in
                        "(\(position + 1)) " + outcome.violations.map { $0.relative(to: path) }.joined(separator: "; ")
                    }
                result.fail(
                    path,
                    keyword,
                    "fits none of the \(schemas.count) schemas of \(keyword): " + reasons.joined(separator: " ")
                )
            case "oneOf" where fitting.count > 1:
                let which = fitting.map { String($0 + 1) }.joined(separator: ", ")
                result.fail(
                    path,
                    keyword,
                    "fits \(fitting.count) of the schemas of oneOf (\(which)); it must fit exactly one"
                )
            default:
                for position in fitting { result.absorbEvaluated(outcomes[position]) }
            }
        }
    }
}

extension SchemaChecker {
    /// The types the schemas of `keyword` allow, as a person lists them (`a string or null`),
    /// when each refused the value for its type alone.
    fileprivate func typesOnly(
        _ outcomes: [SchemaResult],
        of node: SchemaNode,
        _ keyword: String,
        path: SchemaPath
    ) -> String? {
        guard outcomes.allSatisfy({ $0.violations.count == 1 && $0.violations[0].keyword == "type" }),
            outcomes.allSatisfy({ $0.violations[0].path == path.text }),
            case .array(let schemas)? = node.members?[keyword]
        else { return nil }
        var names: [String] = []
        for case .object(let schema) in schemas {
            switch schema["type"] {
            case .string(let name)?: names.append(article(name))
            case .array(let list)?: for case .string(let name) in list { names.append(article(name)) }
            default: return nil
            }
        }
        guard names.count > 1 else { return nil }
        return names.dropLast().joined(separator: ", ") + " or " + names.last!
    }
}

extension Defaults.JSONSchema.Violation {
    /// The violation said from `path`: its message alone when it is about the value there.
    func relative(to path: SchemaPath) -> String {
        self.path == path.text ? message : description
    }
}

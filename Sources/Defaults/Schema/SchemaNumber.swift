/// A JSON number as an exact decimal: its significant digits and a power of ten, so numbers are
/// compared by value whatever their notation (`1.0` is `1`, `1e2` is `100`) and however large.
struct SchemaNumber: Sendable, Comparable {
    /// Whether the number is below zero (never for zero).
    let isNegative: Bool
    /// The significant digits, without leading or trailing zeros; empty for zero.
    let digits: [UInt8]
    /// The power of ten the digits are multiplied by.
    let exponent: Int

    /// The number written as `text` in JSON; `nil` when it is not JSON number syntax.
    init?(_ text: String) {
        var bytes = Array(text.utf8)[...]
        var negative = false
        if bytes.first == UInt8(ascii: "-") {
            negative = true
            bytes = bytes.dropFirst()
        }
        var whole: [UInt8] = []
        var fraction: [UInt8] = []
        while let byte = bytes.first, byte >= 48, byte <= 57 {
            whole.append(byte - 48)
            bytes = bytes.dropFirst()
        }
        guard !whole.isEmpty else { return nil }
        if bytes.first == UInt8(ascii: ".") {
            bytes = bytes.dropFirst()
            while let byte = bytes.first, byte >= 48, byte <= 57 {
                fraction.append(byte - 48)
                bytes = bytes.dropFirst()
            }
            guard !fraction.isEmpty else { return nil }
        }
        var power = 0
        if let byte = bytes.first, byte == UInt8(ascii: "e") || byte == UInt8(ascii: "E") {
            bytes = bytes.dropFirst()
            var negativePower = false
            if let sign = bytes.first, sign == UInt8(ascii: "+") || sign == UInt8(ascii: "-") {
                negativePower = sign == UInt8(ascii: "-")
                bytes = bytes.dropFirst()
            }
            guard !bytes.isEmpty else { return nil }
            for byte in bytes {
                guard byte >= 48, byte <= 57 else { return nil }
                // Beyond a trillion the power only decides which way a comparison goes.
                power = min(power * 10 + Int(byte - 48), 1_000_000_000_000)
            }
            bytes = bytes.dropLast(bytes.count)
            if negativePower { power = -power }
        }
        guard bytes.isEmpty else { return nil }
        var significant = ArraySlice(whole + fraction)
        power -= fraction.count
        while significant.first == 0 { significant = significant.dropFirst() }
        while significant.last == 0 {
            significant = significant.dropLast()
            power += 1
        }
        digits = Array(significant)
        exponent = digits.isEmpty ? 0 : power
        isNegative = negative && !digits.isEmpty
    }

    /// Whether the number has no fractional part.
    var isInteger: Bool { exponent >= 0 }

    static func < (lhs: SchemaNumber, rhs: SchemaNumber) -> Bool {
        if lhs.isNegative != rhs.isNegative { return lhs.isNegative }
        let magnitudeLess = lhs.magnitudeOrder(rhs) == .less
        let magnitudeGreater = lhs.magnitudeOrder(rhs) == .greater
        return lhs.isNegative ? magnitudeGreater : magnitudeLess
    }

    static func == (lhs: SchemaNumber, rhs: SchemaNumber) -> Bool {
        lhs.isNegative == rhs.isNegative && lhs.digits == rhs.digits && lhs.exponent == rhs.exponent
    }

    private enum Order { case less, same, greater }

    /// How the magnitudes compare.
    private func magnitudeOrder(_ other: SchemaNumber) -> Order {
        if digits.isEmpty || other.digits.isEmpty {
            return digits.isEmpty ? (other.digits.isEmpty ? .same : .less) : .greater
        }
        // The place of the leading digit decides first, then the digits one by one.
        let place = digits.count + exponent
        let otherPlace = other.digits.count + other.exponent
        if place != otherPlace { return place < otherPlace ? .less : .greater }
        for position in 0..<max(digits.count, other.digits.count) {
            let mine = position < digits.count ? digits[position] : 0
            let theirs = position < other.digits.count ? other.digits[position] : 0
            if mine != theirs { return mine < theirs ? .less : .greater }
        }
        return .same
    }

    /// Whether the number is a whole multiple of `divisor` (which is above zero), exactly.
    func isMultiple(of divisor: SchemaNumber) -> Bool {
        if digits.isEmpty { return true }
        // self = a·10^p, divisor = b·10^q: the quotient (a/b)·10^(p-q) is whole when b divides
        // a·10^(p-q) (p ≥ q), or when b·10^(q-p) divides a.
        if exponent >= divisor.exponent {
            guard let modulus = Self.integer(divisor.digits), modulus > 0 else { return divisionByDouble(divisor) }
            var remainder = Self.remainder(of: digits, modulo: modulus)
            remainder = Self.multiplied(
                remainder,
                Self.power(10, exponent - divisor.exponent, modulo: modulus),
                modulus
            )
            return remainder == 0
        }
        let shift = divisor.exponent - exponent
        // The divisor's digits and shift make a number longer than self's digits: never a divisor.
        if divisor.digits.count + shift > digits.count { return false }
        guard divisor.digits.count + shift <= 18, let modulus = Self.integer(divisor.digits) else {
            return divisionByDouble(divisor)
        }
        var scaled = modulus
        for _ in 0..<shift { scaled *= 10 }
        return Self.remainder(of: digits, modulo: scaled) == 0
    }

    /// The digits as one integer, when they fit in 18 of them.
    private static func integer(_ digits: [UInt8]) -> UInt64? {
        guard digits.count <= 18 else { return nil }
        return digits.reduce(0) { $0 * 10 + UInt64($1) }
    }

    private static func remainder(of digits: [UInt8], modulo modulus: UInt64) -> UInt64 {
        digits.reduce(0) { (($0 * 10) + UInt64($1)) % modulus }
    }

    private static func multiplied(_ a: UInt64, _ b: UInt64, _ modulus: UInt64) -> UInt64 {
        let product = a.multipliedFullWidth(by: b)
        return modulus.dividingFullWidth((product.high, product.low)).remainder
    }

    private static func power(_ base: UInt64, _ exponent: Int, modulo modulus: UInt64) -> UInt64 {
        var result: UInt64 = 1 % modulus
        var square = base % modulus
        var rest = exponent
        while rest > 0 {
            if rest & 1 == 1 { result = multiplied(result, square, modulus) }
            square = multiplied(square, square, modulus)
            rest >>= 1
        }
        return result
    }

    /// The divisor has more digits than any integer holds: the quotient through `Double`.
    private func divisionByDouble(_ divisor: SchemaNumber) -> Bool {
        let quotient = doubleValue / divisor.doubleValue
        return quotient.isFinite && quotient.rounded() == quotient
    }

    /// The number as the nearest `Double`.
    var doubleValue: Double {
        let text = (isNegative ? "-" : "") + (digits.isEmpty ? "0" : digits.map(String.init).joined()) + "e\(exponent)"
        return Double(text) ?? 0
    }
}

import DefaultsObservation
import Foundation
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

extension Coordinator {
    // MARK: - The checks

    func checkEverything(
        final: [String: String],
        folder: URL,
        temporaryFolder: String,
        temporaryBefore: Set<String>,
        thirdActor: ThirdActor,
        reader: RawReader
    ) -> (passed: Int, failed: Int) {
        let totals = ledger.totals
        let third = thirdActor.totals
        let readerTotals = reader.totals
        say("")
        say(
            "operations: "
                + totals.operations.sorted { $0.key < $1.key }.map { "\($0.key) \($0.value)" }.joined(separator: ", ")
        )
        say(
            "third actor: \(third.inPlace) edits in place, \(third.renamed) saved by rename, \(third.tool) defaults write, "
                + "\(third.broken) times broken for a moment"
        )
        say(
            "file reader: \(readerTotals.reads) whole reads, \(readerTotals.excused) reads while the third actor had the file broken"
        )
        say("")

        var passed = 0
        var failed = 0
        func verdict(_ check: Check, _ detail: String, ok: Bool = true) {
            let failures = ledger.failures(of: check)
            let pass = ok && failures.count == 0
            say("\(pass ? "PASS" : "FAIL")  \(check.title) — \(detail)")
            if failures.count > 0 {
                for text in failures.first { say("      \(text)") }
                if failures.count > failures.first.count {
                    say("      … \(failures.count - failures.first.count) more")
                }
            }
            if pass { passed += 1 } else { failed += 1 }
        }

        verdict(
            .deadlock,
            "longest pause \(seconds(longestQuiet.nanoseconds))\(longestQuiet.lane.isEmpty ? "" : " (\(longestQuiet.lane))")"
        )

        var memoryOK = true
        var memoryDetails: [String] = []
        for index in rss.keys.sorted() {
            let samples = (rss[index] ?? []).filter { $0.time <= runEnd }
            let middle = ledger.runStart + (runEnd - ledger.runStart) / 2
            let secondHalf = samples.filter { $0.time >= middle }.map(\.kilobytes)
            guard secondHalf.count >= 6 else {
                memoryDetails.append("p\(index): too few samples")
                memoryOK = false
                continue
            }
            let tenth = max(3, secondHalf.count / 10)
            let first = secondHalf.prefix(tenth).sorted()[tenth / 2]
            let last = secondHalf.suffix(tenth).sorted()[tenth / 2]
            let growth = Double(last - first) / Double(first) * 100
            if growth > 10 { memoryOK = false }
            let peak = samples.map(\.kilobytes).max() ?? 0
            memoryDetails.append(
                "p\(index) \(first / 1024) → \(last / 1024) MB (\(String(format: "%+.1f", growth))%, peak \(peak / 1024) MB)"
            )
        }
        verdict(.memory, memoryDetails.joined(separator: ", "), ok: memoryOK)

        verdict(
            .parses,
            "\(readerTotals.reads + readerTotals.excused) reads; \(readerTotals.excused) unparsable ones excused, as they "
                + "overlapped one of the third actor's \(thirdActor.windowCount) rewrites in place or breaks"
        )

        let errors = ledger.libraryErrorReports
        let leftovers = ((try? FileManager.default.contentsOfDirectory(atPath: folder.path)) ?? []).sorted()
        let movedAside = leftovers.filter { $0.contains(".corrupt-") }
        for text in errors.first { ledger.fail(.libraryErrors, text) }
        if errors.count > errors.first.count {
            ledger.fail(.libraryErrors, "… \(errors.count - errors.first.count) more reports")
        }
        verdict(
            .libraryErrors,
            "\(errors.count) reports to the error handler, \(movedAside.count) files moved aside",
            ok: errors.count == 0 && movedAside.isEmpty
        )

        verdict(
            .halfTransactions,
            "checked in every read of the file, and in \(totals.operations["read"] ?? 0) reads of a suite"
        )

        let finalSync = final.filter { $0.key.hasPrefix("sync.") }.compactMapValues { Int($0) }
        let keysAtEnd = ledger.checkFinalValues(finalSync)
        let sampled = ledger.sampleTotals
        verdict(
            .synchronized,
            "\(totals.syncReports) synchronized writes; \(sampled.keys) key checks in \(sampled.samples) samples of the "
                + "file, \(keysAtEnd) keys at the end; \(totals.removeAlls) removeAll() made some of them void"
        )

        for round in ["live", "quiet"] {
            let check: Check = round == "live" ? .observersLive : .observersQuiet
            let results = ledger.observerResults(round)
            for (process, result) in results.sorted(by: { $0.key < $1.key }) {
                for mismatch in result.mismatches { ledger.fail(check, "p\(process): \(mismatch)") }
            }
            let observers = results.values.reduce(0) { $0 + $1.count }
            let kinds =
                round == "live" ? "the observers that read the store or are told fresh values" : "every observer"
            verdict(check, "\(kinds) of \(results.count) processes (\(observers) long-lived observers in all)")
        }

        let allowed: Set<String> = ["settings.json", "settings.json.lock"]
        for name in leftovers where !allowed.contains(name) { ledger.fail(.temporaryFiles, "\(folder.path)/\(name)") }
        let temporaryAfter = Set((try? FileManager.default.contentsOfDirectory(atPath: temporaryFolder)) ?? [])
        for name in temporaryAfter.subtracting(temporaryBefore).sorted() {
            ledger.fail(.temporaryFiles, "\(temporaryFolder)/\(name)")
        }
        verdict(.temporaryFiles, "\(folder.path) holds \(leftovers.joined(separator: ", "))")

        let counter = Int(final["counter"] ?? "") ?? -1
        let expected = totals.increments + third.increments
        verdict(
            .counter,
            "\(counter) = \(totals.increments) exclusive transactions + \(third.increments) edits of the third actor",
            ok: counter == expected
        )
        if counter != expected { say("      the counter is \(counter), the increments \(expected)") }

        verdict(
            .withoutPropagation,
            "\(totals.operations["withoutPropagation"] ?? 0) quiet-key writes, half of them inside it"
        )
        verdict(
            .synchronousDelivery,
            "\((totals.operations["observed write"] ?? 0) + (totals.operations["model"] ?? 0)) writes checked"
        )
        verdict(
            .trackingOnce,
            "\(totals.operations["withObservationTracking rounds"] ?? 0) rounds; "
                + "\(totals.operations["rounds told while installing"] ?? 0) told while Observation was still "
                + "installing them, its own race, called \(totals.operations["later calls of rounds told while installing"] ?? 0) "
                + "times more, not counted"
        )
        verdict(.processes, "\(children.count) worker processes, \(third.tool) runs of defaults")

        say("\(passed) passed, \(failed) failed")
        return (passed, failed)
    }
}

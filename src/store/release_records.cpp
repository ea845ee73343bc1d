// The audit's records of observed releases (ReleaseStore), and of the releases it parked while
// another transaction held their rows (migration 012).
#include <nlohmann/json.hpp>
#include <pqxx/pqxx>

#include "store/job_store.hpp"
#include "store/row_locks.hpp"

namespace hourglass::store {

using nlohmann::json;

namespace {

// Ids and runs from a release copy's headers may be any bytes: replaced, they match no row.
std::string dump_release_rows(const json& rows) {
    return rows.dump(-1, ' ', false, json::error_handler_t::replace);
}

// A release as the statements read it (jsonb_to_recordset).
json release_row(const ObservedRelease& release) {
    return {{"id", release.id},
            {"run", release.run},
            {"due_ms", to_epoch_ms(release.due)},
            {"released_us", release.released_at.time_since_epoch().count()}};
}

// Records `releases` in `tx` (see ReleaseStore::record_releases). With `around_locks`, only
// those whose rows, and whose groups' rows, no other transaction holds; the positions of the
// others are returned in `parked`, not yet parked.
RecordedReleases record_releases_in(pqxx::work& tx, const std::vector<ObservedRelease>& releases,
                                    bool around_locks) {
    RecordedReleases recorded;
    std::set<std::string> observed;
    for (const auto& release : releases) observed.insert(release.id);
    std::set<std::string> held_elsewhere;
    if (around_locks) {
        held_elsewhere = lock_rows_not_held_elsewhere(tx, observed);
        json groups = json::array();
        for (const auto& release : releases) {
            if (!held_elsewhere.contains(release.id)) {
                groups.push_back({{"id", release.id}, {"run", release.run}});
            }
        }
        for (const auto& row : tx.exec_prepared("lock_group_runs", dump_release_rows(groups))) {
            held_elsewhere.insert(row[0].as<std::string>());
        }
    } else {
        tx.exec_prepared("lock_observed_runs", dump_release_rows(json(observed)));
    }
    json rows = json::array();
    for (std::size_t i = 0; i < releases.size(); ++i) {
        const auto& release = releases[i];
        if (held_elsewhere.contains(release.id)) {
            recorded.parked.push_back(i);
            continue;
        }
        rows.push_back(release_row(release));
    }
    if (!rows.empty()) {
        for (const auto& row : tx.exec_prepared("record_releases", dump_release_rows(rows))) {
            if (!row[0].is_null()) recorded.lateness_ms.push_back(row[0].as<double>());
        }
    }
    return recorded;
}

// The parked releases recorded in one transaction at most: a lock on many rows parks many.
constexpr int kParkedBatch = 1000;

}  // namespace

RecordedReleases JobStore::record_releases(const std::vector<ObservedRelease>& releases) {
    if (releases.empty()) return {};
    return record_around_locks(*connection_, [&](pqxx::work& tx, bool around_locks) {
        auto recorded = record_releases_in(tx, releases, around_locks);
        if (!recorded.parked.empty()) {
            json rows = json::array();
            for (const auto i : recorded.parked) rows.push_back(release_row(releases[i]));
            tx.exec_prepared("park_releases", dump_release_rows(rows));
        }
        return recorded;
    });
}

RecordedParked JobStore::record_parked_releases() {
    pqxx::work tx(*connection_);
    tx.exec(kBriefRowLockWait);  // a guard: recording around locks waits for no lock
    std::vector<ObservedRelease> releases;
    for (const auto& row : tx.exec_prepared("parked_releases", kParkedBatch)) {
        releases.push_back({row[0].as<std::string>(), row[1].as<int>(),
                            from_epoch_ms(row[2].as<std::int64_t>()),
                            std::chrono::sys_time<std::chrono::microseconds>{
                                std::chrono::microseconds{row[3].as<std::int64_t>()}}});
    }
    RecordedParked result;
    if (!releases.empty()) {
        auto recorded = record_releases_in(tx, releases, /*around_locks=*/true);
        result.lateness_ms = std::move(recorded.lateness_ms);
        std::vector<bool> still_held(releases.size(), false);
        for (const auto i : recorded.parked) still_held[i] = true;
        json done = json::array();
        for (std::size_t i = 0; i < releases.size(); ++i) {
            if (!still_held[i]) done.push_back({{"id", releases[i].id}, {"run", releases[i].run}});
        }
        if (!done.empty()) tx.exec_prepared("forget_parked_releases", dump_release_rows(done));
        result.unparked = done.size();
    }
    result.still_parked =
        static_cast<std::size_t>(tx.exec_prepared1("count_parked_releases")[0].as<std::int64_t>());
    tx.commit();
    return result;
}

}  // namespace hourglass::store

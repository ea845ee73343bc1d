#include "store/row_locks.hpp"

#include <algorithm>
#include <iterator>
#include <nlohmann/json.hpp>
#include <vector>

namespace hourglass::store {

using nlohmann::json;

std::set<std::string> lock_rows_not_held_elsewhere(pqxx::work& tx,
                                                   const std::set<std::string>& ids) {
    // Ids from a release copy's headers may be any bytes: replaced, they match no row.
    const auto as_json = [](const auto& values) {
        return json(values).dump(-1, ' ', false, json::error_handler_t::replace);
    };
    std::set<std::string> locked;
    for (const auto& row : tx.exec_prepared("lock_unless_locked", as_json(ids))) {
        locked.insert(row[0].as<std::string>());
    }
    std::set<std::string> held_elsewhere;
    if (locked.size() == ids.size()) return held_elsewhere;
    std::vector<std::string> skipped;
    std::set_difference(ids.begin(), ids.end(), locked.begin(), locked.end(),
                        std::back_inserter(skipped));
    for (const auto& row : tx.exec_prepared("existing_ids", as_json(skipped))) {
        held_elsewhere.insert(row[0].as<std::string>());
    }
    return held_elsewhere;
}

}  // namespace hourglass::store

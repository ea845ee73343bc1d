#include "store/errors.hpp"

#include <nlohmann/json.hpp>
#include <pqxx/except>
#include <string>

namespace hourglass::store {

FailureKind classify_failure(const std::exception& failure) noexcept {
    if (dynamic_cast<const pqxx::broken_connection*>(&failure) != nullptr ||
        dynamic_cast<const pqxx::in_doubt_error*>(&failure) != nullptr) {
        return FailureKind::transient;
    }
    if (const auto* sql = dynamic_cast<const pqxx::sql_error*>(&failure)) {
        const std::string& state = sql->sqlstate();
        if (state == "55P03") return FailureKind::busy;  // lock_not_available
        // SQLSTATE classes: 22 data exception, 23 integrity constraint violation, 54 program
        // limit exceeded (row too big, nesting too deep).
        const auto cls = state.substr(0, 2);
        return cls == "22" || cls == "23" || cls == "54" ? FailureKind::about_the_data
                                                         : FailureKind::transient;
    }
    if (dynamic_cast<const nlohmann::json::exception*>(&failure) != nullptr ||
        dynamic_cast<const pqxx::conversion_error*>(&failure) != nullptr ||
        dynamic_cast<const pqxx::argument_error*>(&failure) != nullptr) {
        return FailureKind::about_the_data;
    }
    return FailureKind::transient;
}

bool is_unreachable(const std::exception& failure) noexcept {
    return dynamic_cast<const pqxx::broken_connection*>(&failure) != nullptr;
}

bool is_missing_table(const std::exception& failure) noexcept {
    return dynamic_cast<const pqxx::undefined_table*>(&failure) != nullptr;
}

}  // namespace hourglass::store

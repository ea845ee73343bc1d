#include "store/statements.hpp"

#include <pqxx/connection>
#include <stdexcept>
#include <string>

namespace hourglass::store {

std::string_view statement_text(std::string_view name) {
    for (const auto& statement : embedded_statements()) {
        if (statement.name == name) return statement.text;
    }
    throw std::out_of_range("no statement " + std::string(name) + " in src/store/sql");
}

void prepare_statements(pqxx::connection_base& connection) {
    for (const auto& statement : embedded_statements()) {
        connection.prepare(std::string(statement.name), std::string(statement.text));
    }
}

}  // namespace hourglass::store

// The store's SQL: one prepared statement per src/store/sql/<name>.sql, embedded at build time
// (cmake/embed_statements.cmake) and named after its file.
#pragma once

#include <span>
#include <string_view>

namespace pqxx {
class connection_base;
}

namespace hourglass::store {

struct Statement {
    std::string_view name;
    std::string_view text;
};

std::span<const Statement> embedded_statements();

// The text of the statement `name`; throws std::out_of_range for a name with no file.
std::string_view statement_text(std::string_view name);

// Defines every statement on the connection. pqxx prepares each on the server only at its
// first use, so a connection pays only for the statements it runs.
void prepare_statements(pqxx::connection_base& connection);

}  // namespace hourglass::store

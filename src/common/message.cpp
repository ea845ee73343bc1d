#include "hourglass/message.hpp"

#include <algorithm>

namespace hourglass {

const FieldValue* find_header(const BasicProperties& properties, std::string_view name) noexcept {
    if (!properties.headers) return nullptr;
    for (const auto& [key, value] : *properties.headers) {
        if (key == name) return &value;
    }
    return nullptr;
}

void set_header(BasicProperties& properties, std::string name, FieldValue value) {
    remove_header(properties, name);
    if (!properties.headers) properties.headers.emplace();
    properties.headers->emplace_back(std::move(name), std::move(value));
}

bool remove_header(BasicProperties& properties, std::string_view name) {
    if (!properties.headers) return false;
    const auto removed =
        std::erase_if(*properties.headers, [&](const auto& entry) { return entry.first == name; });
    return removed > 0;
}

}  // namespace hourglass

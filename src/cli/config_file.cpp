#include "cli/config_file.hpp"

#include <stdexcept>

namespace hourglass::cli {

namespace {

const CLI::App* find_command(const CLI::App& root, const std::string& name) {
    const auto found =
        root.get_subcommands([&](const CLI::App* command) { return command->get_name() == name; });
    return found.empty() ? nullptr : found.front();
}

bool any_command_has(const CLI::App& root, const std::string& key) {
    const auto found = root.get_subcommands([&](const CLI::App* command) {
        return command->get_option_no_throw("--" + key) != nullptr;
    });
    return !found.empty();
}

}  // namespace

void apply_config_file(const CLI::App& root, CLI::App& command, const std::string& path) {
    std::vector<CLI::ConfigItem> items;
    try {
        items = CLI::ConfigTOML().from_file(path);
    } catch (const CLI::Error& error) {
        throw std::runtime_error("cannot read config file " + path + ": " + error.what());
    }
    for (const auto& item : items) {
        if (item.name == "++" || item.name == "--") continue;  // CLI11's section markers
        const auto where = "config file " + path + ": " + item.fullname();
        if (item.parents.size() > 1 ||
            (item.parents.size() == 1 && !find_command(root, item.parents[0]))) {
            throw std::runtime_error(where + ": unknown section");
        }
        if (item.parents.size() == 1 && item.parents[0] != command.get_name()) continue;
        auto* option = command.get_option_no_throw("--" + item.name);
        if (option == nullptr) {
            if (item.parents.empty() && any_command_has(root, item.name)) continue;
            throw std::runtime_error(where + ": unknown setting");
        }
        if (item.name == "config")
            throw std::runtime_error(where + ": a config file cannot name another");
        if (option->count() > 0) continue;  // given as a flag or environment variable
        try {
            if (option->get_expected_min() == 0) {
                // A flag: `no-audit = true`.
                if (item.inputs.size() != 1)
                    throw CLI::ConversionError::TooManyInputsFlag(item.name);
                option->add_result(option->get_flag_value(item.name, item.inputs.front()));
            } else {
                option->add_result(item.inputs);
            }
            option->run_callback();
        } catch (const CLI::Error& error) {
            throw std::runtime_error(where + ": " + error.what());
        }
    }
}

}  // namespace hourglass::cli

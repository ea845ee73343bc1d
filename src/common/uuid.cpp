#include <uuid/uuid.h>

#include "hourglass/command.hpp"

namespace hourglass {

std::string generate_uuid() {
    uuid_t uuid;
    uuid_generate_random(uuid);
    char text[37];
    uuid_unparse_lower(uuid, text);
    return text;
}

}  // namespace hourglass

#include "apicaller.h"

namespace Sandbox {

ApiCaller::~ApiCaller() = default;

} // namespace Sandbox

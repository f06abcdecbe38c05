#include "transport.h"

namespace Sandbox {

Transport::Transport(QObject *parent)
    : QObject(parent)
{}

Transport::~Transport() = default;

} // namespace Sandbox

#include "execstream.h"

#include "rpcclient.h"

namespace Sandbox {

ExecStream::ExecStream(RpcClient *client, QObject *parent)
    : QObject(parent)
    , m_client(client)
{}

ExecStream::~ExecStream()
{
    if (m_client)
        m_client->forgetStream(this);
}

void ExecStream::cancel()
{
    if (m_client && !m_done)
        m_client->cancelStream(this);
}

} // namespace Sandbox

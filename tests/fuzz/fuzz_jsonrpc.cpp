// libFuzzer target: the strict JSON reader and the JSON-RPC codec on arbitrary bytes.
// Besides not crashing (ASan, UBSan), it checks what the codec promises:
//   - the strict validator and the JSON-RPC codec agree on what is JSON (-32700 exactly when
//     the validator refuses, or when a number is beyond a double);
//   - a text the validator accepts is one QJsonDocument reads too;
//   - what the codec writes, it reads back as the same value;
//   - looking for a member while checking (a page's rows) changes no verdict and finds one value.
#include "protocol/json.h"
#include "protocol/jsonrpc.h"

#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>

#include <cstdlib>

using namespace Sandbox;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const QByteArray text = QByteArray::fromRawData(reinterpret_cast<const char *>(data),
                                                    qsizetype(size));
    const std::optional<Json::SyntaxError> invalid = Json::validate(text);
    const Json::Parsed parsed = Json::parse(text);
    if (invalid && !parsed.error)
        abort(); // parse() must refuse what validate() refuses
    if (invalid && (invalid->offset < 0 || invalid->offset > text.size()))
        abort();
    // Finding a member on the way changes no verdict, and what it finds is one JSON value.
    Json::Member member;
    const std::optional<Json::SyntaxError> watched = Json::validate(text, {"result", "rows"},
                                                                    &member);
    if (bool(watched) != bool(invalid) || (watched && watched->offset != invalid->offset))
        abort();
    if (member.found()
        && (member.begin >= member.end || member.end > text.size()
            || Json::validate(QByteArrayView(text).sliced(member.begin, member.end - member.begin))))
        abort();

    const JsonRpc::Incoming in = JsonRpc::parse(text);
    const bool parseError = in.error && in.error->code == ErrorCode::ParseError;
    if (text.size() <= JsonRpc::MaxMessageBytes && parseError != bool(parsed.error))
        abort(); // -32700 exactly when the text is not (usable) JSON

    if (!parsed.error && (parsed.value.isObject() || parsed.value.isArray())) {
        // Written and read back: the same value.
        const QByteArray written = parsed.value.isObject()
                                       ? QJsonDocument(parsed.value.toObject()).toJson()
                                       : QJsonDocument(parsed.value.toArray()).toJson();
        const Json::Parsed again = Json::parse(written);
        if (again.error || again.value != parsed.value)
            abort();
    }
    for (const JsonRpc::Message &m : in.messages) {
        // Classified messages serialise to valid JSON.
        if (m.isRequest()) {
            const QByteArray out = JsonRpc::serialize(
                JsonRpc::requestObject(m.id, m.method, m.params));
            if (Json::validate(out))
                abort();
        }
    }
    return 0;
}

#include "error.h"

namespace Sandbox {

int httpStatusFor(ErrorCode code)
{
    switch (code) {
    case ErrorCode::ParseError:
    case ErrorCode::InvalidRequest:
    case ErrorCode::InvalidParams:
    case ErrorCode::FileError:
        return 400;
    case ErrorCode::MethodNotFound:
    case ErrorCode::NotFound:
        return 404;
    case ErrorCode::Unauthorized:
        return 401;
    case ErrorCode::QuotaExceeded:
        return 429;
    case ErrorCode::Timeout:
        return 504;
    case ErrorCode::SandboxNotRunning:
    case ErrorCode::AlreadyExists:
        return 409;
    case ErrorCode::PayloadTooLarge:
        return 413;
    case ErrorCode::PathNotAllowed:
        return 403;
    case ErrorCode::StreamGap:
        return 410;
    case ErrorCode::NotImplemented:
        return 501;
    case ErrorCode::Cancelled:
        return 499;
    case ErrorCode::QueryError:
        return 422;
    case ErrorCode::InternalError:
    case ErrorCode::SandboxError:
    case ErrorCode::ConnectionError:
        return 500;
    }
    return 500;
}

ErrorCode errorCodeForHttpStatus(int status)
{
    switch (status) {
    case 400:
        return ErrorCode::InvalidParams;
    case 401:
        return ErrorCode::Unauthorized;
    case 403:
        return ErrorCode::PathNotAllowed;
    case 404:
        return ErrorCode::NotFound;
    case 409:
        return ErrorCode::SandboxNotRunning;
    case 410:
        return ErrorCode::StreamGap;
    case 413:
        return ErrorCode::PayloadTooLarge;
    case 429:
        return ErrorCode::QuotaExceeded;
    case 422:
        return ErrorCode::QueryError;
    case 499:
        return ErrorCode::Cancelled;
    case 501:
        return ErrorCode::NotImplemented;
    case 504:
        return ErrorCode::Timeout;
    default:
        return ErrorCode::InternalError;
    }
}

QString errorCodeName(ErrorCode code)
{
    switch (code) {
    case ErrorCode::ParseError:
        return QStringLiteral("parse error");
    case ErrorCode::InvalidRequest:
        return QStringLiteral("invalid request");
    case ErrorCode::MethodNotFound:
        return QStringLiteral("method not found");
    case ErrorCode::InvalidParams:
        return QStringLiteral("invalid params");
    case ErrorCode::InternalError:
        return QStringLiteral("internal error");
    case ErrorCode::Unauthorized:
        return QStringLiteral("unauthorized");
    case ErrorCode::NotFound:
        return QStringLiteral("not found");
    case ErrorCode::QuotaExceeded:
        return QStringLiteral("quota exceeded");
    case ErrorCode::Timeout:
        return QStringLiteral("timeout");
    case ErrorCode::SandboxNotRunning:
        return QStringLiteral("sandbox not running");
    case ErrorCode::PayloadTooLarge:
        return QStringLiteral("payload too large");
    case ErrorCode::PathNotAllowed:
        return QStringLiteral("path not allowed");
    case ErrorCode::AlreadyExists:
        return QStringLiteral("already exists");
    case ErrorCode::StreamGap:
        return QStringLiteral("stream gap");
    case ErrorCode::NotImplemented:
        return QStringLiteral("not implemented");
    case ErrorCode::SandboxError:
        return QStringLiteral("sandbox error");
    case ErrorCode::Cancelled:
        return QStringLiteral("cancelled");
    case ErrorCode::FileError:
        return QStringLiteral("file error");
    case ErrorCode::QueryError:
        return QStringLiteral("query error");
    case ErrorCode::ConnectionError:
        return QStringLiteral("connection error");
    }
    return QStringLiteral("error %1").arg(int(code));
}

bool isKnownErrorCode(int code)
{
    return code != int(ErrorCode::ConnectionError)
           && errorCodeName(ErrorCode(code)) != QStringLiteral("error %1").arg(code);
}

QJsonObject Error::toJson() const
{
    QJsonObject o{{QStringLiteral("code"), int(code)}, {QStringLiteral("message"), message}};
    if (!data.isUndefined() && !data.isNull())
        o.insert(QStringLiteral("data"), data);
    return o;
}

Error Error::fromJson(const QJsonValue &value)
{
    const QJsonObject o = value.toObject();
    const QJsonValue code = o.value(QStringLiteral("code"));
    if (!value.isObject() || !code.isDouble())
        return {ErrorCode::InternalError, QStringLiteral("malformed error object from server"),
                value};
    Error e;
    e.code = ErrorCode(code.toInt());
    e.message = o.value(QStringLiteral("message")).toString();
    e.data = o.value(QStringLiteral("data"));
    return e;
}

Error Error::invalidParams(const QString &field, const QString &why)
{
    return {ErrorCode::InvalidParams, field + QStringLiteral(": ") + why,
            QJsonObject{{QStringLiteral("field"), field}}};
}

Error Error::notFound(const QString &what)
{
    return {ErrorCode::NotFound, what + QStringLiteral(" not found"), {}};
}

} // namespace Sandbox

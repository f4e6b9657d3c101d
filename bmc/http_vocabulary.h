// The HTTP vocabulary the Redfish service and its event feed speak, from the shared server (net/).
#pragma once

#include "net/http_server.h"
#include "net/http_status.h"

namespace switchyard::bmc {

using net::HttpRequest;
using net::HttpResponse;
using net::httpStatusOf;
using net::OpenStream;
using net::Reply;
using net::StreamWriter;

}  // namespace switchyard::bmc

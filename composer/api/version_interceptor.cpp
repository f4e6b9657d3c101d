#include "composer/api/version_interceptor.h"

#include <string>

#include "composer/model/version.h"

namespace switchyard {

namespace {

class VersionInterceptor final : public grpc::experimental::Interceptor {
 public:
  void Intercept(grpc::experimental::InterceptorBatchMethods* methods) override {
    if (methods->QueryInterceptionHookPoint(grpc::experimental::InterceptionHookPoints::PRE_SEND_INITIAL_METADATA))
      methods->GetSendInitialMetadata()->emplace(kVersionMetadata, version_);
    methods->Proceed();
  }

 private:
  std::string version_{projectVersion()};
};

class VersionInterceptorFactory final : public grpc::experimental::ServerInterceptorFactoryInterface {
 public:
  grpc::experimental::Interceptor* CreateServerInterceptor(grpc::experimental::ServerRpcInfo*) override { return new VersionInterceptor(); }
};

}  // namespace

std::vector<std::unique_ptr<grpc::experimental::ServerInterceptorFactoryInterface>> versionInterceptors() {
  std::vector<std::unique_ptr<grpc::experimental::ServerInterceptorFactoryInterface>> out;
  out.push_back(std::make_unique<VersionInterceptorFactory>());
  return out;
}

}  // namespace switchyard

package kubernetes

// registry lists every unit (cloud_<name>.go): the one place that names them. Detection tries
// them in this order; the internal-LB annotations (scope.go) are read in it too.
var registry = [...]cloud{gkeCloud{}, awsCloud{}, azureCloud{}, oracleCloud{}, openStackCloud{}, ibmCloud{}, baiduCloud{}, tencentCloud{}, alibabaCloud{}, digitalOceanCloud{}, hetznerCloud{}, volcengineCloud{}, linodeCloud{}, scalewayCloud{}, exoscaleCloud{}, vmwareCloud{}, metallbCloud{}, kubeVIPCloud{}, ciliumCloud{}}

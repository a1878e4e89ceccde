module github.com/idpool/idpool/test/matrix/drivers/go

go 1.19

require github.com/idpool/idpool/clients/go v0.0.0

replace github.com/idpool/idpool/clients/go => ../../../../clients/go

module github.com/idpool/idpool/clients/go

go 1.19

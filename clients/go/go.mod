module github.com/queen-mq/queen/clients/go

go 1.21

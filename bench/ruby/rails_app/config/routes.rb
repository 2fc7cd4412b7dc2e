# frozen_string_literal: true

Rails.application.routes.draw do
  resources :posts, only: %i[index show]
  resources :signups, only: %i[create]
end
